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


rule plan_macros:
    input:
        campaign=lambda wc: CAMPAIGNS[wc.campaign].file,
    output:
        "paper/macros/{campaign}-plan.tex",
    shell:
        "perflab plan --macros {output} {input.campaign} > /dev/null"
