"""Reading text: what the engines and the alignment compare (``tracker.text.units``)."""
