"""Rendering only: tables, progress and summaries of results; no measuring happens here."""
