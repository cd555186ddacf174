# Review: the executed notebooks as an HTML report, with an index page.


rule report:
    input:
        experiments=expand("data/raw/{campaign}/experiment.ipynb", campaign=CAMPAIGNS),
        analyses=[analysis_outputs(c)["notebook"] for c in CAMPAIGNS] + [recheck_outputs(s)["notebook"] for s in RECHECKS],
        paper="paper/main.pdf",
    output:
        "reports/index.html",
    log:
        "logs/report.log",
    shell:
        "perflab report --out reports {input.experiments} {input.analyses} > {log} 2>&1 || {{ cat {log}; exit 1; }}"
