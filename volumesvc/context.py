"""Request context carried from the API through the conductor to computes."""

from oslo_context import context as oslo_context


class RequestContext(oslo_context.RequestContext):
    """oslo.context's context plus the bits volumesvc needs.

    ``service_catalog`` is kept so computes can reach Cinder with the user's
    token; ``read_deleted`` mirrors Nova's soft-delete reads.
    """

    def __init__(self, *args, service_catalog=None, read_deleted="no", **kwargs):
        super().__init__(*args, **kwargs)
        self.service_catalog = service_catalog or []
        self.read_deleted = read_deleted

    def to_dict(self):
        values = super().to_dict()
        values["service_catalog"] = self.service_catalog
        values["read_deleted"] = self.read_deleted
        return values

    @classmethod
    def from_dict(cls, values, **kwargs):
        kwargs.setdefault("service_catalog", values.get("service_catalog"))
        kwargs.setdefault("read_deleted", values.get("read_deleted", "no"))
        return super().from_dict(values, **kwargs)

    def elevated(self):
        """Return an admin copy of this context (for service-side work).

        The copy does not become the thread's current context: that one
        names the request in every log line, and an elevated copy made in
        the middle of a task would otherwise stay the thread's context after
        the task, naming its request in the log lines of the next.
        """
        ctx = self.__class__.from_dict(self.to_dict(), overwrite=False)
        ctx.is_admin = True
        if "admin" not in ctx.roles:
            ctx.roles = list(ctx.roles) + ["admin"]
        return ctx


def get_admin_context(read_deleted="no") -> RequestContext:
    """A context for work no user asked for (heartbeats, periodic tasks)."""
    return RequestContext(user_id=None, project_id=None, is_admin=True,
                          roles=["admin"], read_deleted=read_deleted, overwrite=False)
