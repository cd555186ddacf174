# Review: the executed notebooks as an HTML report, with an index page.


rule report:
    input:
        experiments=[f"data/raw/{c}/experiment.ipynb" for c in sorted(MEASURED) if not MEASURED[c].counterpart_of],
        analyses=[a.outputs["notebook"] for a in ANALYSES],
        paper="paper/main.pdf",
    output:
        "reports/index.html",
    log:
        "logs/report.log",
    shell:
        # the log keeps everything; the site's size line and a warning (over 1.5 x the raw data) reach the console
        "perflab report --out reports {input.experiments} {input.analyses} > {log} 2>&1 || {{ cat {log}; exit 1; }}; "
        "grep -E '^(site:|perflab report:)' {log} || true"
