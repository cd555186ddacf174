# Helpers shared by the rule files: the studies, their campaigns and analyses, and the papermill
# command line. Everything is discovered from studies/*/study.yaml (see docs/studies.md).
import shlex
import sys
from pathlib import Path

from perflab import study as studies, templates
from perflab.errors import UserError

try:
    STUDIES = studies.discover(".", demos=config.get("demos", True))
except UserError as exc:  # one line per problem, as `perflab studies list` prints them; no traceback
    sys.exit("\n".join(f"perflab pipeline: error: {p}" for p in exc.problems))
#: Campaign id -> its reference (file, inventory), over every included study.
CAMPAIGNS = {c.id: c for s in STUDIES for c in s.campaigns}
#: The campaigns the paper waits for: all but the planned ones whose data are not committed yet (those are
#: measured only when named: snakemake data/raw/<campaign>/experiment.ipynb).
MEASURED = {i: c for i, c in CAMPAIGNS.items() if not c.pending()}
#: The planned campaigns without data yet.
PENDING = {i for i, c in CAMPAIGNS.items() if c.pending()}
#: The analyses the paper waits for: those of a planned campaign without data wait with it, but a verdicts
#: analysis runs on what exists (its other questions "not yet measured"; `perflab.study.Analysis.inputs`).
ANALYSES = [a for s in STUDIES for a in s.analyses if a.inputs(PENDING) is not None]
#: The outputs of the analyses that wait (the paper inputs their macros only once they exist).
WAITING = {f for s in STUDIES for a in s.analyses if a not in ANALYSES for f in a.outputs.values()}
#: The package's code, as its most recently modified module: analyses rerun when the code changes (experiments
#: never do). A job reruns when one of its inputs is newer than its outputs, which over the whole package is
#: exactly when its newest module is; one input instead of all ~150 keeps the DAG (and `snakemake -n`) small.
#: Ties in modification time (a fresh clone) are broken by path, so the input stays the same file run to run.
LIB = [max((p.stat().st_mtime_ns, str(p)) for p in Path("lib/perflab").rglob("*.py"))[1]]

wildcard_constraints:
    campaign="|".join(CAMPAIGNS) or "(?!)",


def raw_signature(directory):
    """A digest of the name, size and modification time of every file under ``directory``.

    The `verify_raw` rule takes it as a parameter: Snakemake reruns a job whose parameters
    changed, so any file written, replaced or touched since the last verification makes the
    pipeline check that directory's bytes against its manifest again, before anything reads
    them. Costs a stat per file (well under a second for the committed raw data).
    """
    import hashlib
    import os

    digest = hashlib.sha256()

    def visit(path, rel):
        # os.walk's order (a directory's files by name, then its subdirectories by name), without its
        # os.path.relpath per file, which took three quarters of the time on the committed raw data
        files, dirs = [], []
        for entry in os.scandir(path):
            if not entry.is_dir():
                files.append(entry)
            elif not entry.is_symlink():
                dirs.append(entry)
        for entry in sorted(files, key=lambda e: e.name):
            st = entry.stat()
            digest.update(f"{rel}{entry.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        for entry in sorted(dirs, key=lambda e: e.name):
            visit(entry.path, f"{rel}{entry.name}/")

    if os.path.isdir(directory):  # a campaign not measured yet: the digest of no files, as before it is
        visit(directory, "")
    return digest.hexdigest()


def papermill(notebook, output, parameters, log):
    """Shell command: run `notebook` with papermill on the project's kernel into `output`.

    The executed notebook is written under a temporary name and renamed on success; a
    failed run's partial notebook goes to logs/failed/ for inspection. ``pipeline: true`` lets
    the notebook write the pipeline's own files (opened by hand, it writes under scratch/). Cell output is
    streamed (--log-output) to the terminal and to `log`.
    """
    out = Path(output)
    tmp = out.with_name(f".{out.stem}.tmp.ipynb")
    y = templates.papermill_yaml({**parameters, "pipeline": True})
    q = shlex.quote
    return (
        f"mkdir -p {q(str(out.parent))} logs/failed && "
        f"{{ papermill {q(str(notebook))} {q(str(tmp))} -k {q(config['kernel'])} --cwd . --log-output "
        f"--no-progress-bar --request-save-on-cell-execute -y {q(y)} 2>&1 | tee {q(str(log))} "
        f"&& mv {q(str(tmp))} {q(str(out))}; }} "
        f"|| {{ mv -f {q(str(tmp))} logs/failed/{q(out.parent.name + '-' + out.name)} 2>/dev/null; exit 1; }}"
    )
