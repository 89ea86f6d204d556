"""dfcore's version, which the MetaGraphDefs it writes carry (TF's ``tensorflow/python/framework/versions.py``);
``dfcore.__version__`` and pyproject.toml's version read it from here."""

__version__ = "0.1.0"
