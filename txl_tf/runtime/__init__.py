"""How the package meets Python and TensorFlow at run time.

  tf_start           TensorFlow imported without the lines its C++ libraries print as they load
  lazy_exports       a package's public names loaded on first use (PEP 562)
  error_text         another library's error message as one line
  version            the package version (`txl_tf.__version__`)

Nothing here imports TensorFlow.
"""
