# Experiments: a campaign's raw data is produced once. Its inputs are `ancient`, so editing
# the campaign or the notebook template never reruns a finished experiment; to measure
# again, move data/raw/<campaign>/ aside (`make rerun CAMPAIGN=<campaign>`).


rule experiment:
    input:
        campaign=lambda wc: ancient(CAMPAIGNS[wc.campaign].file),
        notebook=ancient("notebooks/experiment.ipynb"),
    output:
        notebook="data/raw/{campaign}/experiment.ipynb",
    log:
        "logs/experiment/{campaign}.log",
    params:
        cmd=lambda wc, input, output: papermill(
            input.notebook, output.notebook,
            {"campaign": input.campaign, "inventory": CAMPAIGNS[wc.campaign].inventory or config["inventory"],
             "raw_root": "data/raw"}, f"logs/experiment/{wc.campaign}.log"),
    shell:
        "{params.cmd} && perflab seal data/raw/{wildcards.campaign}"


# Every campaign's planned values for the paper, as `perflab plan --macros` writes them, in one process: a
# CLI start per campaign cost more than the values. Editing a campaign rewrites them all (a few seconds); only
# the paper reads them.
rule plan_macros:
    input:
        campaigns=[CAMPAIGNS[c].file for c in sorted(CAMPAIGNS)],
    output:
        [f"paper/macros/{c}-plan.tex" for c in sorted(CAMPAIGNS)],
    params:
        pairs=" ".join(shlex.quote(f) for c in sorted(CAMPAIGNS) for f in (str(CAMPAIGNS[c].file),
                                                                            f"paper/macros/{c}-plan.tex")),
    shell:
        "python -c 'import sys; from perflab.report import planned; planned.write_all(sys.argv[1:])' {params.pairs}"
