"""The knowledge base over HTTP: ``POST /v1/docs`` (a multipart ``file`` upload, or JSON ``{"url"}``),
``GET /v1/docs``, ``DELETE /v1/docs/{id}``, ``GET /v1/docs/search?q=``. Each acts as the caller (their own
documents and the shared ones); only the owner's token may share."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Query, Request

from picoora.gateway.auth import require_token
from picoora.gateway.errors import ERROR_RESPONSES, ApiError
from picoora.gateway.schemas import Deleted, DocAdded, DocList, DocSearch, DocUrlIn
from picoora.gateway.state import caller_of, person_assistant

MAX_UPLOAD_BYTES = 20_000_000

api = APIRouter(prefix="/v1", dependencies=[Depends(require_token)], responses=ERROR_RESPONSES, tags=["docs"])


def _added(outcome: Any) -> DocAdded:
    document = outcome.document.to_json() if outcome.document else None
    return DocAdded(source=outcome.source, status=outcome.status, document=document, error=outcome.error)


@api.post("/docs", response_model=DocAdded,
          openapi_extra={"requestBody": {"content": {
              "application/json": {"schema": DocUrlIn.model_json_schema()},
              "multipart/form-data": {"schema": {"type": "object", "required": ["file"], "properties": {
                  "file": {"type": "string", "format": "binary"}, "shared": {"type": "boolean"}}}}}}})
async def add_doc(request: Request) -> DocAdded:
    """Add a document: an uploaded file (.txt .md .html .pdf .docx) or a web page by URL."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json":
        try:
            body = DocUrlIn.model_validate_json(await request.body())
        except ValueError as exc:
            raise ApiError(400, "invalid_request", f"expected {{\"url\": \"https://...\"}}: {exc}"[:500]) from None
        shared, name, data = body.shared, "", b""
    elif kind == "multipart/form-data":
        name, data, shared = await _upload(request)
    else:
        raise ApiError(400, "unsupported_media_type", "send multipart/form-data with a file, or JSON {\"url\"}")
    if shared and not caller_of(request).owner:
        raise ApiError(403, "forbidden", "only the owner shares documents")
    async with person_assistant(request) as assistant:
        if data:
            outcome = await assistant.add_document_upload(name, data, shared=shared)
        else:
            outcome = (await assistant.add_document_sources([body.url], shared=shared))[0]
    if outcome.status == "failed":
        raise ApiError(400, "unreadable_document", f"{outcome.source}: {outcome.error}")
    return _added(outcome)


async def _upload(request: Request) -> tuple[str, bytes, bool]:
    length = int(request.headers.get("content-length") or 0)
    if length > MAX_UPLOAD_BYTES:
        raise ApiError(413, "document_too_large", f"an upload may have {MAX_UPLOAD_BYTES} bytes at most")
    try:
        form = await request.form(max_files=1, max_fields=2)
    except Exception as exc:  # a malformed multipart body, or python-multipart missing
        raise ApiError(400, "invalid_request", f"cannot read the upload: {exc}"[:300]) from None
    try:
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise ApiError(400, "invalid_request", "the form needs a 'file' part")
        data = await upload.read(MAX_UPLOAD_BYTES + 1)
        if len(data) > MAX_UPLOAD_BYTES:
            raise ApiError(413, "document_too_large", f"an upload may have {MAX_UPLOAD_BYTES} bytes at most")
        if not data:
            raise ApiError(400, "invalid_request", "the uploaded file is empty")
        return upload.filename or "upload.txt", data, str(form.get("shared", "")).lower() in ("1", "true", "yes")
    finally:
        await form.close()


@api.get("/docs", response_model=DocList)
async def list_docs(request: Request) -> DocList:
    """The caller's documents and the shared ones."""
    async with person_assistant(request) as assistant:
        return DocList(documents=[d.to_json() for d in await assistant.documents()])


@api.get("/docs/search", response_model=DocSearch)
async def search_docs(request: Request, q: str = Query(min_length=1, max_length=2000),
                      limit: int = Query(5, ge=1, le=50)) -> DocSearch:
    """The chunks that best answer ``q`` with their sources (none when no document does)."""
    async with person_assistant(request) as assistant:
        hits = await assistant.search_documents(q, limit)
    return DocSearch(query=q, hits=[h.to_json() for h in hits])


@api.delete("/docs/{doc_id}", response_model=Deleted)
async def remove_doc(request: Request, doc_id: str = Path(pattern=r"^[0-9a-f]{12}$")) -> Deleted:
    async with person_assistant(request) as assistant:
        removed = await assistant.remove_document(doc_id)
    if removed is None:
        raise ApiError(404, "not_found", f"no document {doc_id!r} of yours")
    return Deleted(deleted=doc_id)
