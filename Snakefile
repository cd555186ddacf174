# perflab pipeline: studies (studies/*/study.yaml) -> campaigns -> raw (experiment notebook)
# -> tidy tables -> analyses (notebook templates) -> paper PDF and HTML report. See README.md.
import perflab.yamlfile  # noqa: F401  jsonschema without its slow optional format libraries (see perflab.yamlfile)
from snakemake.utils import min_version, validate

min_version("9.0")

# the one loader, with its limits and its schema check (a misspelled key at its line, with the nearest name),
# before Snakemake reads the file (validate() below then fills in the defaults)
perflab.yamlfile.read_yaml("config/config.yaml", perflab.yamlfile.load("config/schema.yaml", "schema")[0], "config")
configfile: "config/config.yaml"
validate(config, "config/schema.yaml")

include: "rules/common.smk"
include: "rules/experiments.smk"
include: "rules/analysis.smk"
include: "rules/paper.smk"
include: "rules/review.smk"


rule all:
    input:
        "paper/main.pdf",
        "reports/index.html",
