"""Figures of a run: report panels (``panels``), trend charts, and the live view (``live``)."""
