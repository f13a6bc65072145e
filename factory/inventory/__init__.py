"""Inventory digest ``inventory-digest/1`` with recipe ``ordinal-path-bytes-sha256/1`` (F-6)."""

from factory.inventory.recipe import (
    EXCLUDED_DIRECTORY_NAMES,
    INVENTORY_FORMAT,
    INVENTORY_RECIPE,
    InventoryRefused,
    InventoryResult,
    Row,
    inventory,
    manifest_document,
)

__all__ = [
    "EXCLUDED_DIRECTORY_NAMES",
    "INVENTORY_FORMAT",
    "INVENTORY_RECIPE",
    "InventoryRefused",
    "InventoryResult",
    "Row",
    "inventory",
    "manifest_document",
]
