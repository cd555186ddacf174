# Paper: latexmk builds paper/main.pdf from the sources and every generated include.


rule paper:
    input:
        sources=["paper/main.tex", "paper/perflab.sty"] + sorted(str(p) for p in Path("paper/chapters").glob("*.tex")),
        generated=[f for c in CAMPAIGNS for k, f in analysis_outputs(c).items() if k not in ("notebook", "parquet", "csv")]
        + [f for s in RECHECKS for k, f in recheck_outputs(s).items() if k != "notebook"],
    output:
        "paper/main.pdf",
    log:
        "logs/paper.log",
    shell:
        "latexmk -pdf -interaction=nonstopmode -halt-on-error -cd paper/main.tex > {log} 2>&1 "
        "|| {{ tail -n 40 {log}; exit 1; }}"
