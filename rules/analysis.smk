# Analysis: raw -> tidy table (one rule per campaign) -> each study's analyses (notebook
# templates with the parameters its study.yaml gives) -> figures, tables and inline values.


# A raw directory is checked against its manifest before anything reads it, and again whenever
# one of its files changed on disk (name, size or modification time: `raw_signature`), so a
# changed byte stops the pipeline with `perflab verify`'s line naming the file. The stamp is
# `ancient` for its readers: a passing check does not make every analysis run again.
rule verify_raw:
    input:
        lambda wc: ancient(CAMPAIGNS[wc.campaign].raw_record),
    output:
        "data/processed/{campaign}.verified",
    params:
        signature=lambda wc: raw_signature(f"data/raw/{wc.campaign}"),
    log:
        "logs/verify/{campaign}.log",
    shell:
        "perflab verify --bytes data/raw/{wildcards.campaign} > {log} 2>&1 || {{ cat {log}; exit 1; }}; "
        "echo {params.signature} > {output}"


rule verify_published:
    output:
        "data/processed/published.verified",
    params:
        signature=lambda wc: raw_signature("data/raw/published"),
    log:
        "logs/verify/published.log",
    shell:
        "perflab verify --bytes data/raw/published > {log} 2>&1 || {{ cat {log}; exit 1; }}; "
        "echo {params.signature} > {output}"


rule tidy:
    input:
        raw=lambda wc: CAMPAIGNS[wc.campaign].raw_record,
        verified=ancient("data/processed/{campaign}.verified"),
        lib=LIB,
    output:
        parquet="data/processed/{campaign}.parquet",
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
            # the study's declaration: its questions and the analyses' parameters (a changed word reruns them)
            declaration=_study(_a).declaration,
            tidy=[f"data/processed/{c}.parquet" for c in _a.inputs(PENDING)],
            published=list(_study(_a).published),
            verified=ancient("data/processed/published.verified") if _study(_a).published else [],
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
