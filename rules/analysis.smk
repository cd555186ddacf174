# Analysis: raw -> tidy table -> statistics -> figure, tables and inline values for the paper.


def analysis_outputs(campaign):
    """Files the analysis of `campaign` writes (the paper includes them)."""
    stem = output_stem(campaign, config["campaigns"][campaign]["analysis"]["metric"])
    return {
        "notebook": f"reports/notebooks/{campaign}-analysis.ipynb",
        "parquet": f"data/processed/{campaign}.parquet",
        "csv": f"data/processed/{campaign}.csv",
        "figure_pdf": f"paper/figures/{stem}.pdf",
        "figure_png": f"paper/figures/{stem}.png",
        "summary": f"paper/tables/{stem}-summary.tex",
        "comparison": f"paper/tables/{stem}-comparison.tex",
        "checks": f"paper/tables/{stem}-checks.tex",
        "macros": f"paper/macros/{stem}.tex",
        "section": f"paper/sections/{stem}.tex",
    }


for _campaign in CAMPAIGNS:

    rule:
        name:
            f"analysis_{_campaign.replace('-', '_')}"
        input:
            raw=f"data/raw/{_campaign}/experiment.ipynb",
            notebook=config["campaigns"][_campaign]["analysis"]["notebook"],
            lib=LIB,
        output:
            **analysis_outputs(_campaign),
        log:
            f"logs/analysis/{_campaign}.log",
        params:
            cmd=lambda wc, input, output, c=_campaign: papermill(
                input.notebook, output.notebook,
                {"campaign": c, "metric": config["campaigns"][c]["analysis"]["metric"],
                 **config["campaigns"][c]["analysis"].get("parameters", {})},
                f"logs/analysis/{c}.log"),
        shell:
            "{params.cmd}"


# Re-checks of published statistics (digitized tables in data/raw/published/).
RECHECKS = ["003-openstack-opennebula"]


def recheck_outputs(study):
    """Files the re-check of `study` writes."""
    return {
        "notebook": f"reports/notebooks/{study}-recheck.ipynb",
        "pvalues": f"paper/tables/{study}-recheck-p.tex",
        "claims": f"paper/tables/{study}-recheck-claims.tex",
        "macros": f"paper/macros/{study}-recheck.tex",
    }


rule recheck:
    input:
        published=lambda wc: sorted(str(p) for p in Path("data/raw/published").glob(f"{wc.study}-*.csv")),
        notebook="notebooks/{study}-recheck.ipynb",
        lib=LIB,
    output:
        notebook="reports/notebooks/{study}-recheck.ipynb",
        pvalues="paper/tables/{study}-recheck-p.tex",
        claims="paper/tables/{study}-recheck-claims.tex",
        macros="paper/macros/{study}-recheck.tex",
    log:
        "logs/recheck/{study}.log",
    params:
        cmd=lambda wc, input, output: papermill(
            input.notebook, output.notebook, {"study": wc.study}, f"logs/recheck/{wc.study}.log"),
    shell:
        "{params.cmd}"
