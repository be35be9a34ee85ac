"""The REST API's request and response models (pydantic), one module per area.

They are the API's one description: ``web.openapi`` writes the OpenAPI document from
them and ``web.validation`` checks requests with them (docs/API.md)."""
