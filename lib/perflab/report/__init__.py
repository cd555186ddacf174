"""Report stage: figure style, figures, LaTeX tables, inline-value macros and lineage sidecars."""
