"""The linking side of multi-cluster meshes: a MeshLink names a local RouterMesh and a token
Secret; the operator redeems the token once with the accepting cluster's operator
(linking/wire.py), keeps the answer in the Secret ``<link>-credentials``, and adds
inter-router connectors to the first routers of the local mesh, without restarting them
(docs/multicluster-link.md).

- spec.py: the MeshLink's spec, parsed;
- redeem.py: the one HTTPS request that redeems a token;
- credentials.py: the Secret that keeps what was redeemed;
- entities.py: the sslProfile and connectors each router gets, and the Secret mounted for them;
- status.py: what a MeshLink's status says (imported by itself: it reads the apply stage's
  outcomes);
- redeemer.py: one pass over a MeshLink (redeem if it never was);
- handlers.py: the kopf handlers."""

from ..observe.links import ObservedLinks, read_links
from .credentials import Credentials, credentials_secret, parse_credentials
from .entities import link_entities, links_secret, links_secret_name
from .observe import LinkPlan, MeshLinks, links_volume, mesh_links, plan_links
from .spec import PLURAL, LinkSpec, parse_link

__all__ = [
           "PLURAL",
           "Credentials",
           "LinkPlan",
           "LinkSpec",
           "MeshLinks",
           "ObservedLinks",
           "credentials_secret",
           "link_entities",
           "links_secret",
           "links_secret_name",
           "links_volume",
           "mesh_links",
           "parse_credentials",
           "parse_link",
           "plan_links",
           "read_links",
]
