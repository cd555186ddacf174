# Paper: latexmk builds paper/main.pdf from the sources, the generated list of studies'
# chapters and inline values, and every generated include.


rule paper_index:
    input:
        [s.declaration for s in STUDIES] + [c.raw_record for c in CAMPAIGNS.values() if c.counterpart_of],
    output:
        macros="paper/macros/studies-macros.tex",
        chapters="paper/macros/studies-chapters.tex",
    params:
        demos="" if config.get("demos", True) else "--no-demos",
    shell:
        "perflab studies index --paper-dir paper {params.demos}"


# How every campaign was measured (window, samples overlapping another campaign's, contention,
# monitors), one sentence per campaign and a table per study, from the verified raw data.
rule evidence:
    input:
        verified=[f"data/processed/{c}.verified" for c in MEASURED],
        # the code that words and tabulates the evidence: a changed phrase rewrites the macros
        lib=LIB,
    output:
        macros="paper/macros/evidence.tex",
        tables=[f"paper/tables/{s}-evidence.tex" for s in sorted({s.id for s in STUDIES for c in s.campaigns if c.id in MEASURED})],
    shell:
        "perflab evidence --macros {output.macros} --tables paper/tables > /dev/null"


rule paper:
    input:
        sources=["paper/main.tex", "paper/perflab.sty", "paper/references.bib", "config/config.yaml"]
        + sorted(str(p) for p in Path("paper/frame").glob("*.tex")) + [s.chapter for s in STUDIES if s.chapter],
        index=rules.paper_index.output,
        generated=[f for a in ANALYSES for k, f in a.outputs.items() if k != "notebook"]
        + [f for s in STUDIES for f in s.macro_files() if f not in WAITING] + rules.evidence.output,
    output:
        "paper/main.pdf",
    log:
        "logs/paper.log",
    shell:
        # The build macros (version, git commit, date) and the frame (author, institution, the pending
        # verdicts note) are written with the paper they describe; a citation without an entry fails it.
        "python -c 'from perflab.report import frame, macros; macros.write_build(); frame.write()' && "
        "latexmk -pdf -interaction=nonstopmode -halt-on-error -cd paper/main.tex > {log} 2>&1 "
        "|| {{ tail -n 40 {log}; exit 1; }}; "
        "python -c 'from perflab.report import frame; frame.check()'"
