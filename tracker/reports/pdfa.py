"""PDF/A-2b for the evidence report: what reportlab does not write, added with pikepdf.

PDF/A-2b (ISO 19005-2, level B: the pages look the same forever) asks for, beyond what
the report already has (every font embedded, no encryption, no JavaScript, no external
content, a document ID in the trailer):

- XMP metadata in the catalog, with the ``pdfaid`` schema (part 2, conformance B) and
  the same title, author, producer and dates as the document information dictionary;
- an output intent naming the colour space the colours mean: sRGB IEC61966-2.1, with
  its ICC profile embedded (made by Pillow's ``ImageCms.createProfile("sRGB")``).

``make_pdfa`` does that. Without pikepdf (or Pillow) it returns the PDF unchanged and
logs why: the report is still complete, only not declared PDF/A. ``pdfa_status``
reads back what a file declares.
"""

from __future__ import annotations

import io
import logging
from functools import cache

log = logging.getLogger(__name__)

OUTPUT_CONDITION = "sRGB IEC61966-2.1"


@cache
def srgb_profile() -> bytes:
    """An sRGB ICC profile (Pillow's built-in, through littleCMS)."""
    from PIL import ImageCms

    return bytes(ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes())


def make_pdfa(pdf: bytes, *, title: str, author: str, subject: str) -> bytes:
    """``pdf`` declared as PDF/A-2b: XMP metadata (``pdfaid`` 2B), the sRGB output
    intent, a document ID. Returns ``pdf`` unchanged when pikepdf or Pillow is missing."""
    try:
        import pikepdf
    except ImportError:
        log.warning("pikepdf is not installed: the evidence PDF is not declared PDF/A-2b")
        return pdf
    try:
        icc = srgb_profile()
    except (ImportError, OSError) as exc:
        log.warning("no sRGB profile (%s): the evidence PDF is not declared PDF/A-2b", exc)
        return pdf

    with pikepdf.open(io.BytesIO(pdf)) as doc:
        profile = doc.make_stream(icc)
        profile["/N"] = 3
        profile["/Alternate"] = pikepdf.Name.DeviceRGB
        intent = pikepdf.Dictionary(
            Type=pikepdf.Name.OutputIntent,
            S=pikepdf.Name.GTS_PDFA1,  # the subtype PDF/A-2 uses too
            OutputConditionIdentifier=pikepdf.String(OUTPUT_CONDITION),
            RegistryName=pikepdf.String("http://www.color.org"),
            Info=pikepdf.String(OUTPUT_CONDITION),
            DestOutputProfile=profile,
        )
        doc.Root.OutputIntents = pikepdf.Array([doc.make_indirect(intent)])
        doc.Root.Lang = pikepdf.String("zh-CN")
        doc.docinfo["/Title"] = pikepdf.String(title)
        doc.docinfo["/Author"] = pikepdf.String(author)
        doc.docinfo["/Subject"] = pikepdf.String(subject)
        if "/Trapped" in doc.docinfo:  # reportlab's /Trapped /False has no XMP twin here
            del doc.docinfo["/Trapped"]
        with doc.open_metadata(set_pikepdf_as_editor=False) as meta:
            meta.load_from_docinfo(doc.docinfo)
            meta["pdfaid:part"] = "2"
            meta["pdfaid:conformance"] = "B"
        out = io.BytesIO()
        # fix_metadata_version keeps XMP and Info in step; a fresh /ID pair is written
        # (PDF/A wants one); object streams stay off for old readers.
        doc.save(
            out,
            fix_metadata_version=True,
            deterministic_id=True,
            object_stream_mode=pikepdf.ObjectStreamMode.disable,
        )
    return out.getvalue()


def pdfa_status(pdf: bytes) -> str:
    """What a PDF declares in its XMP metadata: ``"2B"`` for PDF/A-2b, ``""`` for none."""
    import pikepdf

    with pikepdf.open(io.BytesIO(pdf)) as doc:
        return str(doc.open_metadata().pdfa_status)
