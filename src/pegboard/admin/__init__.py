"""The web admin UI: servers, tools, approvals, audit, sessions and the effective config.

Served at ``/admin`` by ``pegboard serve --http`` and locally by ``pegboard ui``
(:func:`pegboard.admin.app.admin_app`); it calls the service layer only.
"""
