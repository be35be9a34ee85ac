"""Reading the files a user hands in: .jsonl, .txt, .html/.htm, .docx, .zip and folders,
each yielding documents or errors that name the input.
"""
