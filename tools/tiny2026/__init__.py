"""The modules of tools/make_tiny_models_2026.py (tiny random-weight models and goldens for the
2026 families); that script is the entry point and documents what they do. They import
`make_tiny_models` (the 2024-2025 families' script) as a top-level module, so tools/ must be on
sys.path, as it is when the entry point runs."""
