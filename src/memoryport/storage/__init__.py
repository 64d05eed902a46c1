"""Storage backends: plain files and databases. Nothing here knows about providers or tools."""
