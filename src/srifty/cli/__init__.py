"""The srifty command line (Typer + Rich)."""
