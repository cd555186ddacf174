# Analysis: raw -> tidy table (one rule per campaign) -> each study's analyses (notebook
# templates with the parameters its study.yaml gives) -> figures, tables and inline values.


rule tidy:
    input:
        raw=lambda wc: CAMPAIGNS[wc.campaign].raw_record,
        lib=LIB,
    output:
        parquet="data/processed/{campaign}.parquet",
        csv="data/processed/{campaign}.csv",
        quarantine="data/processed/{campaign}.quarantine.csv",
        lineage="data/processed/{campaign}.lineage.json",
    log:
        "logs/tidy/{campaign}.log",
    shell:
        "perflab tidy data/raw/{wildcards.campaign} --out data/processed > {log} 2>&1 || {{ cat {log}; exit 1; }}"


def _study(analysis):
    return next(s for s in STUDIES if s.id == analysis.study)


for _a in ANALYSES:

    rule:
        name:
            f"analysis_{_a.name.replace('-', '_')}"
        input:
            notebook=_a.notebook,
            tidy=[f"data/processed/{c}.parquet" for c in _a.reads],
            published=list(_study(_a).published),
            lib=LIB,
        output:
            **_a.outputs,
        log:
            f"logs/analysis/{_a.name}.log",
        params:
            cmd=lambda wc, input, output, a=_a: papermill(
                input.notebook, output.notebook, a.papermill_parameters(), f"logs/analysis/{a.name}.log"),
        shell:
            "{params.cmd}"
