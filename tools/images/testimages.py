"""The test images: Debian-built stand-ins for nginx and curl, under the names the tests and examples use.

On real nodes nothing can be pulled, yet the tests, the examples and the demo run
`nginx` and `curlimages/curl`. So those images are built here the way the runtime image
is, from Debian bookworm's packages, and carry the upstream names (`kind load` makes an
image of any name available the same way): they behave as the upstream images do for
what the tests use, but what runs inside is Debian's build (nginx 1.22, curl 7.88),
whatever the tag says.

Both are made with mmdebstrap's `extract` variant (and the runtime image's dpkg exclusions): the package and its dependencies
unpacked, no dpkg, apt, shell or maintainer scripts, so the few files those would have
made are written here (the accounts, nginx's configuration and page).

- nginx: `nginx-light` serving nginx's welcome page (the one the playground's stand-in
  serves, `playground/nodeagent/standins.py`) on port 80, as upstream's image: the master
  as root, workers as `nginx` (101), logs to stdout and stderr, `nginx -g 'daemon off;'`,
  stopped with SIGQUIT. Its pid file and temporary files go to /tmp, so it also runs
  as a non-root user (on a port it may bind) and on a read-only root with /tmp mounted.
- curl: `curl` as the entry point (arguments are curl's, as with upstream's image), run
  as `curl_user` (100), upstream's user.
"""

from __future__ import annotations

import ast
import shutil
from dataclasses import dataclass
from pathlib import Path

from tools.images import debian, oci
from tools.images.errors import BuildError
from tools.images.runtimeimage import DPKG_CONFIG

ROOT = Path(__file__).resolve().parents[2]
STANDINS = ROOT / "playground" / "nodeagent" / "standins.py"
NGINX_TAGS = ("latest", "1.25", "1.26", "1.27")
CURL_TAGS = ("latest", "8.11.1")
NGINX_CONF = """\
user nginx;
worker_processes auto;
pid /tmp/nginx.pid;
error_log /dev/stderr notice;

events {
    worker_connections 1024;
}

http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log /dev/stdout;
    client_body_temp_path /tmp/client_temp;
    proxy_temp_path /tmp/proxy_temp;
    fastcgi_temp_path /tmp/fastcgi_temp;
    uwsgi_temp_path /tmp/uwsgi_temp;
    scgi_temp_path /tmp/scgi_temp;
    sendfile on;
    keepalive_timeout 65;

    server {
        listen 80;
        server_name localhost;
        location / {
            root /usr/share/nginx/html;
            index index.html index.htm;
        }
        error_page 500 502 503 504 /50x.html;
        location = /50x.html {
            root /usr/share/nginx/html;
        }
    }
}
"""
ERROR_PAGE = """\
<!DOCTYPE html>
<html>
<head>
<title>Error</title>
</head>
<body>
<h1>An error occurred.</h1>
<p>Sorry, the page you are looking for is currently unavailable.<br/>
Please try again later.</p>
</body>
</html>
"""


@dataclass(frozen=True)
class TestImage:
    """One test image: its Debian packages, its names, and what a container of it runs."""

    repository: str
    tags: tuple[str, ...]
    packages: tuple[str, ...]
    config: oci.ImageConfig
    #: name, uid, gid of the accounts /etc/passwd lists besides root and nobody
    accounts: tuple[tuple[str, int, int], ...]
    filename: str

    @property
    def names(self) -> list[str]:
        return [f"{self.repository}:{tag}" for tag in self.tags]


NGINX = TestImage(
    repository="docker.io/library/nginx",
    tags=NGINX_TAGS,
    packages=("nginx-light",),
    config=oci.ImageConfig(
        cmd=("nginx", "-g", "daemon off;"), exposed_ports=("80/tcp",), stop_signal="SIGQUIT"
    ),
    accounts=(("nginx", 101, 101),),
    filename="nginx.tar",
)
CURL = TestImage(
    repository="docker.io/curlimages/curl",
    tags=CURL_TAGS,
    packages=("curl",),
    config=oci.ImageConfig(entrypoint=("curl",), cmd=("--help",), user="100:101"),
    accounts=(("curl_user", 100, 101),),
    filename="curl.tar",
)
IMAGES = (NGINX, CURL)


def welcome_page(source: Path = STANDINS) -> str:
    """The welcome page the playground's nginx stand-in serves (its `WELCOME` constant, read without importing)."""
    for node in ast.parse(source.read_text()).body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets] == ["WELCOME"]
            and isinstance(node.value, ast.Constant)
        ):
            return str(node.value.value)
    raise BuildError(f"{source} has no WELCOME page")


def accounts_files(accounts: tuple[tuple[str, int, int], ...]) -> tuple[str, str]:
    """/etc/passwd and /etc/group: root, the image's accounts, nobody."""
    users = [("root", 0, 0, "/root", "/bin/sh")]
    users += [(name, uid, gid, "/nonexistent", "/usr/sbin/nologin") for name, uid, gid in accounts]
    users.append(("nobody", 65534, 65534, "/nonexistent", "/usr/sbin/nologin"))
    passwd = "".join(f"{name}:x:{uid}:{gid}:{name}:{home}:{shell}\n" for name, uid, gid, home, shell in users)
    groups = {0: "root", **{gid: name for name, _, gid in accounts}, 65534: "nogroup"}
    group = "".join(f"{name}:x:{gid}:\n" for gid, name in groups.items())
    return passwd, group


def contents(image: TestImage, rootfs: Path) -> oci.LayerContents:
    """The extracted packages and the files their maintainer scripts (or upstream's Dockerfile) would add."""
    layer = debian.layer(rootfs)
    passwd, group = accounts_files(image.accounts)
    layer.add_file("etc/passwd", passwd.encode())
    layer.add_file("etc/group", group.encode())
    layer.add_directory("tmp", mode=0o1777)
    if image is NGINX:
        layer.add_file("etc/nginx/nginx.conf", NGINX_CONF.encode())
        layer.add_directory("usr/share/nginx/html")
        layer.add_file("usr/share/nginx/html/index.html", welcome_page().encode())
        layer.add_file("usr/share/nginx/html/50x.html", ERROR_PAGE.encode())
        layer.add_directory("var/log/nginx")
        layer.add_symlink("var/log/nginx/access.log", "/dev/stdout")
        layer.add_symlink("var/log/nginx/error.log", "/dev/stderr")
    return layer


def write_image(image: TestImage, folder: Path, *, architecture: str) -> None:
    rootfs = folder / "rootfs"
    debian.bootstrap(
        debian.Bootstrap(packages=image.packages, variant="extract", dpkg_config=DPKG_CONFIG), rootfs
    )
    debian.remove_build_leftovers(rootfs)
    oci.write_image(
        folder / image.filename,
        names=image.names,
        layers=[contents(image, rootfs)],
        config=image.config,
        architecture=architecture,
        history=[
            f"mmdebstrap {debian.SUITE} extract: {' '.join(image.packages)} (a stand-in for {image.repository})"
        ],
    )
    shutil.rmtree(rootfs)
