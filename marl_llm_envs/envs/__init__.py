"""One module per environment; each module's docstring is that env's manual."""
