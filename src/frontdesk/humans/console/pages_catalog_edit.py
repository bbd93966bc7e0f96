"""One catalog item: its form (``/console/catalog/new``, ``/console/catalog/{item_id}``) and its
photo gallery (upload, caption, move, remove).

Everyone signed in reads an item; only an owner changes it. Every change goes through
``BusinessStore``, which checks it, audits it (before and after) and bumps the tenant's data
revision in one transaction, then the page is fetched again (303). A refused item form or upload is
shown again with the owner's input and the problem next to it (422; 413 for a photo over the
limit); nothing is saved. Ids are looked up in the operator's own tenant only, and a 404 never
repeats the id it was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, Response
from starlette.datastructures import FormData, UploadFile

from frontdesk.business import CURRENCIES, BusinessData, BusinessStore, CatalogItem, ItemFields, Photo, Price
from frontdesk.business.catalog import SLUG_PATTERN
from frontdesk.business.photos import MAX_PHOTO_BYTES
from frontdesk.errors import NotFoundError, PayloadError, TooLargeError
from frontdesk.humans.console import csrf
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._forms import (
    FormProblems,
    MoveForm,
    Values,
    actor_of,
    business_store,
    form_values,
    grouped,
    moved,
    refusal_lines,
    texts,
)
from frontdesk.humans.console._guard import actor, redirect, uploader, viewer
from frontdesk.humans.console._item_form import FIELDS, item_from, item_values, tier_rows
from frontdesk.humans.console._render import page, parse_form
from frontdesk.humans.console.auth import Principal
from frontdesk.humans.console.i18n import translator
from frontdesk.humans.console.pages_catalog import CATALOG_PHOTOS_PATH, ItemPath

PhotoPath = Annotated[str, PathParam(pattern=SLUG_PATTERN, max_length=60)]  # photo ids are slugs too
# A photo and the few small fields beside it (CSRF token, a caption per language, multipart
# headers); anything larger is refused while it streams in, before it is all in memory.
UPLOAD_LIMIT = MAX_PHOTO_BYTES + 64 * 1024
MAX_PHOTO_MB = MAX_PHOTO_BYTES // (1024 * 1024)
NOTICES = ("saved", "unchanged")


def add_routes(router: APIRouter, deps: ConsoleDeps) -> None:
    # ``/new`` before ``/{item_id}``: the first route that matches serves the request.
    @router.get("/console/catalog/new", response_class=HTMLResponse)
    async def item_new_page(request: Request) -> Response:
        me = await viewer(deps, request)
        data = await business_store(deps, request).read(me.tenant_id)
        return _item_page(me, data, None, item_values(None, _usual_currency(data)))

    @router.post("/console/catalog/new", response_class=HTMLResponse)
    async def item_create(request: Request) -> Response:
        me = await actor(deps, request, owner=True)
        values = form_values(await csrf.read_form(request))
        store = business_store(deps, request)
        data = await store.read(me.tenant_id)
        item_id = values.get("id", "")
        try:
            fields = item_from(values, list(data.languages), item_id, creating=True)
            await store.save_item(me.tenant_id, fields, actor_of(me), create=True)
        except FormProblems as exc:
            return _item_page(me, data, None, values, errors=exc.by_field, status=422)
        except PayloadError as exc:  # the store's own checks (an id taken already, languages)
            errors = grouped(refusal_lines(exc), FIELDS)
            return _item_page(me, data, None, values, errors=errors, status=422)
        raise redirect(f"/console/catalog/{fields.id}?notice=saved")

    @router.get("/console/catalog/{item_id}", response_class=HTMLResponse)
    async def item_page(request: Request, item_id: ItemPath) -> Response:
        me = await viewer(deps, request)
        data = await business_store(deps, request).read(me.tenant_id)
        item = _item(data, item_id)
        notice = request.query_params.get("notice", "")
        return _item_page(me, data, item, item_values(item), notice=notice if notice in NOTICES else "")

    @router.post("/console/catalog/{item_id}", response_class=HTMLResponse)
    async def item_save(request: Request, item_id: ItemPath) -> Response:
        me = await actor(deps, request, owner=True)
        values = form_values(await csrf.read_form(request))
        store = business_store(deps, request)
        data = await store.read(me.tenant_id)
        item = _item(data, item_id)
        try:
            fields = item_from(values, list(data.languages), item.id, creating=False)
            changed = await _saved(store, me, fields)
        except FormProblems as exc:
            return _item_page(me, data, item, values, errors=exc.by_field, status=422)
        except PayloadError as exc:
            return _item_page(me, data, item, values, errors=grouped(refusal_lines(exc), FIELDS), status=422)
        raise redirect(f"/console/catalog/{item.id}?notice={'saved' if changed else 'unchanged'}")

    @router.post("/console/catalog/{item_id}/photos", response_class=HTMLResponse)
    async def photo_upload(request: Request, item_id: ItemPath) -> Response:
        me = await uploader(deps, request)
        store = business_store(deps, request)
        t = translator(me.language)
        try:
            form = await csrf.read_form(request, limit=UPLOAD_LIMIT)
        except TooLargeError:
            # Refused before the rest of the body is read. The page shown changes nothing, so
            # it needs no CSRF token (which is in the part of the body never read).
            data = await store.read(me.tenant_id)
            item = _item(data, item_id)
            return _item_page(
                me, data, item, item_values(item), upload_error=t("gallery.too_large", mb=MAX_PHOTO_MB), status=413
            )
        try:
            await csrf.require(request, me.csrf_token)
            data = await store.read(me.tenant_id)
            item = _item(data, item_id)
            refusal = await _add_photo(store, me, item, form, data.languages)
        finally:
            await form.close()
        if refusal is not None:  # shown next to the upload form, with what the owner can do
            too_large = isinstance(refusal, TooLargeError)
            error = (
                t("gallery.too_large", mb=MAX_PHOTO_MB) if too_large else t("gallery.refused", reason=refusal.message)
            )
            return _item_page(me, data, item, item_values(item), upload_error=error, status=413 if too_large else 422)
        raise redirect(f"/console/catalog/{item.id}#gallery")

    @router.post("/console/catalog/{item_id}/photos/{photo_id}/caption")
    async def photo_caption(request: Request, item_id: ItemPath, photo_id: PhotoPath) -> Response:
        me = await actor(deps, request, owner=True)
        values = form_values(await csrf.read_form(request))
        store = business_store(deps, request)
        data = await store.read(me.tenant_id)
        photo = _photo(_item(data, item_id), photo_id)
        caption = texts(values, "caption", data.languages)
        try:
            await store.set_photo_caption(me.tenant_id, photo.id, caption, actor_of(me))
        except NotFoundError:
            raise NotFoundError("no such photo") from None
        raise redirect(f"/console/catalog/{item_id}#photo-{photo.id}")

    @router.post("/console/catalog/{item_id}/photos/{photo_id}/move")
    async def photo_move(request: Request, item_id: ItemPath, photo_id: PhotoPath) -> Response:
        me = await actor(deps, request, owner=True)
        form = await parse_form(request, MoveForm)
        store = business_store(deps, request)
        item = _item(await store.read(me.tenant_id), item_id)
        photo = _photo(item, photo_id)
        order = moved([p.id for p in item.photos], photo.id, form.direction)
        if order is not None:
            await store.reorder_photos(me.tenant_id, item.id, order, actor_of(me))
        raise redirect(f"/console/catalog/{item_id}#photo-{photo.id}")

    @router.post("/console/catalog/{item_id}/photos/{photo_id}/remove")
    async def photo_remove(request: Request, item_id: ItemPath, photo_id: PhotoPath) -> Response:
        me = await actor(deps, request, owner=True)
        store = business_store(deps, request)
        photo = _photo(_item(await store.read(me.tenant_id), item_id), photo_id)
        try:
            await store.remove_photo(me.tenant_id, photo.id, actor_of(me))
        except NotFoundError:
            raise NotFoundError("no such photo") from None
        raise redirect(f"/console/catalog/{item_id}#gallery")


async def _add_photo(
    store: BusinessStore, me: Principal, item: CatalogItem, form: FormData, languages: Sequence[str]
) -> PayloadError | None:
    """Add the uploaded photo last to the item's gallery; the refusal, if it is refused."""
    upload = form.get("photo")
    if not isinstance(upload, UploadFile):
        return PayloadError(translator(me.language)("gallery.no_file"))
    photo = await upload.read(MAX_PHOTO_BYTES + 1)  # one byte over the limit is enough to refuse it
    try:
        await store.add_photo(
            me.tenant_id, item.id, photo, texts(form_values(form), "caption", languages), actor_of(me)
        )
    except NotFoundError:  # removed since the page read it
        raise NotFoundError("no such item") from None
    except PayloadError as exc:
        return exc
    return None


async def _saved(store: BusinessStore, me: Principal, fields: ItemFields) -> bool:
    try:
        return await store.save_item(me.tenant_id, fields, actor_of(me), create=False)
    except NotFoundError:  # removed since the page read it
        raise NotFoundError("no such item") from None


def _item(data: BusinessData, item_id: str) -> CatalogItem:
    """The item of the operator's own tenant; 404 without repeating the id (another tenant's?)."""
    item = data.item(item_id)
    if item is None:
        raise NotFoundError("no such item")
    return item


def _photo(item: CatalogItem, photo_id: str) -> Photo:
    """A photo of this item's own gallery."""
    photo = next((p for p in item.photos if p.id == photo_id), None)
    if photo is None:
        raise NotFoundError("no such photo")
    return photo


def _usual_currency(data: BusinessData) -> str:
    """The currency of the catalog's first priced item: a new item most likely sells in it too."""
    return next((i.price.currency for i in data.items if isinstance(i.price, Price)), "USD")


def _item_page(
    me: Principal,
    data: BusinessData,
    item: CatalogItem | None,
    values: Values,
    *,
    errors: dict[str, list[str]] | None = None,
    upload_error: str = "",
    notice: str = "",
    status: int = 200,
) -> Response:
    return page(
        "catalog_item.html",
        me,
        data=data,
        item=item,
        values=values,
        rows=tier_rows(values),
        errors=errors or {},
        upload_error=upload_error,
        notice=notice,
        currencies=list(CURRENCIES),
        default=data.default_language,
        photos_url=f"{CATALOG_PHOTOS_PATH}/{data.tenant_id}",
        max_photo_mb=MAX_PHOTO_MB,
        status=status,
    )
