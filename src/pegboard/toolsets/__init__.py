"""Toolsets: one protocol (list the tools for a scope, call one by name) and small wrappers.

The agent dispatcher, the gateway and ``pegboard tools`` all call through
``compose(RegistryToolset(registry), DeferralSettings(...))``: one resolve, one did-you-mean,
one approval step, one error shape and one audit record per call, whatever the route.
"""

from pegboard.toolsets.approval import ApprovalToolset
from pegboard.toolsets.audit import AuditedToolset
from pegboard.toolsets.base import ToolList, Toolset, WrapperToolset
from pegboard.toolsets.compose import call_or_error, compose
from pegboard.toolsets.deferral import DeferralSettings, DeferredToolset, StatusSource
from pegboard.toolsets.registry import RegistryToolset, is_disabled

__all__ = [
    "ApprovalToolset",
    "AuditedToolset",
    "DeferralSettings",
    "DeferredToolset",
    "RegistryToolset",
    "StatusSource",
    "ToolList",
    "Toolset",
    "WrapperToolset",
    "call_or_error",
    "compose",
    "is_disabled",
]
