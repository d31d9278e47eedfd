#!/usr/bin/python3
"""Creates (idempotently) what the overcast OpenStack harness needs inside OpenStack.

    bootstrap.py keystone     service project, roles, service users, catalog
    bootstrap.py resources    image, flavors, project k8s, user ccm, networks, router,
                              application credential; writes the env and cloud.conf files
    bootstrap.py wait-compute SINCE  waits until nova-compute reports after SINCE (epoch)

Reads its settings from the environment (exported by up.sh). One Python process does what
would take dozens of `openstack` CLI calls (each ~1.5 s of imports).
"""

import datetime
import json
import os
import sys
import time

import openstack
from openstack import exceptions as sdk_exc

E = os.environ
STATE = E["STATE"]
HOST = "127.0.0.1"
AUTH_URL = "http://%s:%s/v3" % (HOST, E["KEYSTONE_PORT"])
REGION = E["REGION"]

SERVICE_USERS = ["glance", "nova", "placement", "neutron", "octavia", "barbican"]
ROLES = ["admin", "member", "reader", "load-balancer_member", "load-balancer_observer",
         "load-balancer_admin", "load-balancer_global_observer", "load-balancer_quota_admin",
         # Barbican's (legacy default policy): who may store secrets and containers
         "creator", "observer", "audit"]
CATALOG = [
    # name, type, url
    ("glance", "image", "http://%s:%s" % (HOST, E["GLANCE_PORT"])),
    ("nova", "compute", "http://%s:%s/v2.1" % (HOST, E["NOVA_PORT"])),
    ("placement", "placement", "http://%s:%s" % (HOST, E["PLACEMENT_PORT"])),
    ("neutron", "network", "http://%s:%s" % (HOST, E["NEUTRON_PORT"])),
    ("octavia", "load-balancer", "http://%s:%s" % (HOST, E["OCTAVIA_PORT"])),
    ("barbican", "key-manager", "http://%s:%s" % (HOST, E["BARBICAN_PORT"])),
]
# The CCM's roles in its project: Barbican's creator stores the certificates of the
# Services that name a kubernetes.io/tls Secret (what cloud-provider-openstack's docs ask).
CCM_ROLES = ("member", "load-balancer_member", "creator")

PROJECT = "k8s"
CCM_USER = "ccm"
# A user with the member role only: Octavia's default policy refuses it (overcast
# doctor must say which role is missing).
NOLB_USER = "ccm-no-lb"
APP_CRED_NAME = "overcast-ccm"
IMAGE_NAME = "overcast-tiny"
FLAVORS = [  # name, id, ram MiB, vcpus, disk GiB
    ("m1.tiny", "1", 512, 1, 1),
    ("m1.small", "2", 2048, 1, 20),
]
PUBLIC_NET, PUBLIC_SUBNET = "public", "public-subnet"
PUBLIC_CIDR, PUBLIC_GW = "203.0.113.0/24", "203.0.113.1"
PUBLIC_POOL = ("203.0.113.10", "203.0.113.250")
TENANT_NET, TENANT_SUBNET, ROUTER = "k8s-net", "k8s-subnet", "k8s-router"
TENANT_CIDR, TENANT_GW = "10.0.0.0/24", "10.0.0.1"


def log(msg):
    print("[bootstrap %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def admin_conn():
    return openstack.connect(
        load_yaml_config=False, load_envvars=False,
        auth_url=AUTH_URL, username="admin", password=E["ADMIN_PASS"],
        project_name="admin", user_domain_id="default", project_domain_id="default",
        region_name=REGION, identity_api_version="3")


def ccm_conn(project_id):
    return openstack.connect(
        load_yaml_config=False, load_envvars=False,
        auth_url=AUTH_URL, username=CCM_USER, password=E["CCM_PASS"],
        project_id=project_id, user_domain_id="default",
        region_name=REGION, identity_api_version="3")


def ensure_project(conn, name, description):
    p = conn.identity.find_project(name, domain_id="default")
    if p is None:
        p = conn.identity.create_project(name=name, domain_id="default",
                                         description=description)
        log("created project %s" % name)
    return p


def ensure_user(conn, name, password, default_project=None):
    u = conn.identity.find_user(name, domain_id="default")
    if u is None:
        kw = {}
        if default_project is not None:
            kw["default_project_id"] = default_project.id
        u = conn.identity.create_user(name=name, domain_id="default", password=password,
                                      **kw)
        log("created user %s" % name)
    else:
        # the password in the state dir is the truth
        conn.identity.update_user(u, password=password)
    return u


def ensure_role(conn, name):
    r = conn.identity.find_role(name)
    if r is None:
        r = conn.identity.create_role(name=name)
        log("created role %s" % name)
    return r


def grant(conn, project, user, role):
    if not conn.identity.validate_user_has_project_role(project, user, role):
        conn.identity.assign_project_role_to_user(project, user, role)


def cmd_keystone():
    conn = admin_conn()
    roles = {name: ensure_role(conn, name) for name in ROLES}
    service = ensure_project(conn, "service", "OpenStack services")
    for name in SERVICE_USERS:
        user = ensure_user(conn, name, E["SERVICE_PASS"])
        grant(conn, service, user, roles["admin"])
    for name, stype, url in CATALOG:
        svc = next((s for s in conn.identity.services() if s.type == stype), None)
        if svc is None:
            svc = conn.identity.create_service(name=name, type=stype,
                                               description="%s (overcast harness)" % name)
            log("created service %s (%s)" % (name, stype))
        have = {(ep.interface, ep.url) for ep in conn.identity.endpoints(service_id=svc.id)}
        for iface in ("public", "internal", "admin"):
            if (iface, url) not in have:
                conn.identity.create_endpoint(service_id=svc.id, interface=iface, url=url,
                                              region_id=REGION)
        log("catalog: %s %s" % (stype, url))


def ensure_image(conn):
    img = conn.image.find_image(IMAGE_NAME)
    if img is not None and img.status == "active":
        return img
    if img is not None:
        conn.image.delete_image(img)
    # Any bytes will do: the fake virt driver never reads them.
    img = conn.image.create_image(
        name=IMAGE_NAME, data=b"\0" * 1024, disk_format="raw", container_format="bare",
        visibility="public", wait=True, timeout=60)
    log("uploaded image %s (%s)" % (IMAGE_NAME, img.id))
    return img


def ensure_flavors(conn):
    out = {}
    for name, fid, ram, vcpus, disk in FLAVORS:
        f = conn.compute.find_flavor(name, ignore_missing=True)
        if f is None:
            f = conn.compute.create_flavor(name=name, id=fid, ram=ram, vcpus=vcpus,
                                           disk=disk, is_public=True)
            log("created flavor %s" % name)
        out[name] = f
    return out


def find_one(items):
    items = list(items)
    return items[0] if items else None


def ensure_networks(conn, project):
    net = conn.network
    pub = find_one(net.networks(name=PUBLIC_NET, is_router_external=True))
    if pub is None:
        pub = net.create_network(name=PUBLIC_NET, is_router_external=True, is_shared=False,
                                 provider_network_type="flat",
                                 provider_physical_network="public",
                                 description="external network of the overcast harness")
        log("created network %s" % PUBLIC_NET)
    pub_sub = find_one(net.subnets(name=PUBLIC_SUBNET, network_id=pub.id))
    if pub_sub is None:
        pub_sub = net.create_subnet(
            name=PUBLIC_SUBNET, network_id=pub.id, ip_version=4, cidr=PUBLIC_CIDR,
            gateway_ip=PUBLIC_GW, is_dhcp_enabled=False,
            allocation_pools=[{"start": PUBLIC_POOL[0], "end": PUBLIC_POOL[1]}])
        log("created subnet %s %s" % (PUBLIC_SUBNET, PUBLIC_CIDR))
    tnet = find_one(net.networks(name=TENANT_NET, project_id=project.id))
    if tnet is None:
        tnet = net.create_network(name=TENANT_NET, project_id=project.id,
                                  description="tenant network of the overcast harness")
        log("created network %s" % TENANT_NET)
    tsub = find_one(net.subnets(name=TENANT_SUBNET, network_id=tnet.id))
    if tsub is None:
        tsub = net.create_subnet(name=TENANT_SUBNET, network_id=tnet.id,
                                 project_id=project.id, ip_version=4, cidr=TENANT_CIDR,
                                 gateway_ip=TENANT_GW, is_dhcp_enabled=True)
        log("created subnet %s %s" % (TENANT_SUBNET, TENANT_CIDR))
    router = find_one(net.routers(name=ROUTER, project_id=project.id))
    if router is None:
        router = net.create_router(name=ROUTER, project_id=project.id,
                                   external_gateway_info={"network_id": pub.id})
        log("created router %s" % ROUTER)
    elif not router.external_gateway_info:
        router = net.update_router(router, external_gateway_info={"network_id": pub.id})
    # Neutron checks reachability before it associates a floating IP: the tenant subnet
    # must be on a router whose gateway is on the external network.
    attached = any(
        any(ip.get("subnet_id") == tsub.id for ip in p.fixed_ips)
        for p in net.ports(device_id=router.id, device_owner="network:router_interface"))
    if not attached:
        net.add_interface_to_router(router, subnet_id=tsub.id)
        log("attached %s to %s" % (TENANT_SUBNET, ROUTER))
    return pub, pub_sub, tnet, tsub, router


def ensure_app_credential(admin, ccm_user, project):
    """The CCM's application credential; its secret lives only in the state dir."""
    path = os.path.join(STATE, "app-credential.json")
    saved = None
    if os.path.exists(path):
        with open(path) as f:
            saved = json.load(f)
    ccm = ccm_conn(project.id)
    existing = find_one(c for c in ccm.identity.application_credentials(user=ccm_user.id)
                        if c.name == APP_CRED_NAME)
    # An application credential keeps the roles its user had when it was made: one
    # made before a role was added (creator, when Barbican joined) is made again.
    have_roles = {r["name"] for r in (existing.roles or [])} if existing is not None else set()
    if existing is not None and saved and saved.get("id") == existing.id \
            and set(CCM_ROLES) <= have_roles:
        return saved
    if existing is not None:
        ccm.identity.delete_application_credential(ccm_user.id, existing.id)
    cred = ccm.identity.create_application_credential(
        user=ccm_user.id, name=APP_CRED_NAME,
        description="cloud-controller-manager of the overcast harness")
    saved = {"id": cred.id, "secret": cred.secret, "name": APP_CRED_NAME}
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        json.dump(saved, f)
    log("created application credential %s (%s)" % (APP_CRED_NAME, cred.id))
    return saved


def write_private(path, text):
    tmp = path + ".tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(text)
    os.replace(tmp, path)


def sh_quote(v):
    return "'" + str(v).replace("'", "'\\''") + "'"


def cmd_resources():
    conn = admin_conn()
    admin_project = conn.identity.find_project("admin", domain_id="default")
    image = ensure_image(conn)
    flavors = ensure_flavors(conn)

    project = ensure_project(conn, PROJECT, "the Kubernetes cluster of the overcast harness")
    user = ensure_user(conn, CCM_USER, E["CCM_PASS"], default_project=project)
    for role in CCM_ROLES:
        grant(conn, project, user, conn.identity.find_role(role))
    nolb = ensure_user(conn, NOLB_USER, E["CCM_PASS"], default_project=project)
    grant(conn, project, nolb, conn.identity.find_role("member"))
    # e2e tests create many servers, ports and security groups: no quota gets in the way.
    conn.set_compute_quotas(project.id, instances=-1, cores=-1, ram=-1)
    conn.set_network_quotas(project.id, network=-1, subnet=-1, port=-1, router=-1,
                            floatingip=-1, security_group=-1, security_group_rule=-1)
    # Octavia makes each load balancer's VIP security group (and its rules) in its
    # service project: with Neutron's default quota of 10, the eleventh load
    # balancer goes to ERROR.
    service = conn.identity.find_project("service")
    conn.set_network_quotas(service.id, port=-1, security_group=-1, security_group_rule=-1)

    pub, pub_sub, tnet, tsub, router = ensure_networks(conn, project)
    cred = ensure_app_credential(conn, user, project)

    base = {
        "project_id": project.id, "admin_project_id": admin_project.id,
        "user_id": user.id, "image_id": image.id,
        "flavor_ids": {k: v.id for k, v in flavors.items()},
        "public_network_id": pub.id, "public_subnet_id": pub_sub.id,
        "network_id": tnet.id, "subnet_id": tsub.id, "router_id": router.id,
        "application_credential_id": cred["id"],
    }
    write_private(os.path.join(STATE, "base.json"), json.dumps(base, indent=2) + "\n")

    env = [
        ("OVERCAST_OPENSTACK_STATE", STATE),
        ("OS_AUTH_URL", AUTH_URL),
        ("OS_REGION_NAME", REGION),
        ("OS_IDENTITY_API_VERSION", "3"),
        ("OS_INTERFACE", "public"),
        ("OS_CLIENT_CONFIG_FILE", os.path.join(STATE, "clouds.yaml")),
        # the CCM's application credential (what cloud.conf uses)
        ("OVERCAST_OS_APPLICATION_CREDENTIAL_ID", cred["id"]),
        ("OVERCAST_OS_APPLICATION_CREDENTIAL_SECRET", cred["secret"]),
        ("OVERCAST_OS_APPLICATION_CREDENTIAL_NAME", cred["name"]),
        # the CCM's user (what cloud-password.conf uses)
        ("OVERCAST_OS_USERNAME", CCM_USER),
        ("OVERCAST_OS_USER_ID", user.id),
        ("OVERCAST_OS_PASSWORD", E["CCM_PASS"]),
        ("OVERCAST_OS_PROJECT_ID", project.id),
        ("OVERCAST_OS_PROJECT_NAME", PROJECT),
        ("OVERCAST_OS_DOMAIN_ID", "default"),
        ("OVERCAST_OS_DOMAIN_NAME", "Default"),
        # the cloud's admin (for tests that act as someone else, e.g. another cluster)
        ("OVERCAST_OS_ADMIN_USERNAME", "admin"),
        ("OVERCAST_OS_ADMIN_PASSWORD", E["ADMIN_PASS"]),
        ("OVERCAST_OS_ADMIN_PROJECT_NAME", "admin"),
        ("OVERCAST_OS_ADMIN_PROJECT_ID", admin_project.id),
        ("OVERCAST_OS_ADMIN_DOMAIN_ID", "default"),
        # the base resources that reset.sh keeps
        ("OVERCAST_OS_PUBLIC_NETWORK_ID", pub.id),
        ("OVERCAST_OS_PUBLIC_SUBNET_ID", pub_sub.id),
        ("OVERCAST_OS_NETWORK_ID", tnet.id),
        ("OVERCAST_OS_SUBNET_ID", tsub.id),
        ("OVERCAST_OS_ROUTER_ID", router.id),
        ("OVERCAST_OS_IMAGE_ID", image.id),
        ("OVERCAST_OS_FLAVOR_ID", flavors["m1.tiny"].id),
        ("OVERCAST_OS_FLAVOR_NAME", "m1.tiny"),
        ("OVERCAST_OS_COMPUTE_HOST", E["COMPUTE_HOST"]),
        ("OVERCAST_OS_CLOUD_CONF", os.path.join(STATE, "cloud.conf")),
        ("OVERCAST_OS_CLOUD_PASSWORD_CONF", os.path.join(STATE, "cloud-password.conf")),
        ("OVERCAST_OS_CLOUD_NO_LB_CONF", os.path.join(STATE, "cloud-no-lb.conf")),
    ]
    write_private(os.path.join(STATE, "openstack.env"),
                  "# Written by test/openstack/up.sh; source it (or test/openstack/env.sh).\n"
                  + "".join("export %s=%s\n" % (k, sh_quote(v)) for k, v in env))

    # This Octavia (11.0.0, Debian 12) makes a fully populated load balancer
    # ACTIVE but leaves its listeners, pools and members PENDING_CREATE for good
    # (measured 2026-11-23), as some provider drivers do: the CCM is configured as
    # an operator of such a cloud would configure it (cloud-provider-openstack's
    # option). The CCM also finds this out by itself without the option.
    SERIAL_LB = "provider-requires-serial-api-calls=true\n"
    write_private(os.path.join(STATE, "cloud.conf"), """[Global]
auth-url=%s
application-credential-id=%s
application-credential-secret=%s
region=%s

[LoadBalancer]
subnet-id=%s
floating-network-id=%s
%s
[Route]
router-id=%s
""" % (AUTH_URL, cred["id"], cred["secret"], REGION, tsub.id, pub.id, SERIAL_LB, router.id))

    def password_conf(user, route):
        return """[Global]
auth-url=%s
username=%s
password=%s
tenant-id=%s
domain-id=default
region=%s

[LoadBalancer]
subnet-id=%s
floating-network-id=%s
%s""" % (AUTH_URL, user, E["CCM_PASS"], project.id, REGION, tsub.id, pub.id, SERIAL_LB) + (
            "\n[Route]\nrouter-id=%s\n" % router.id if route else "")

    write_private(os.path.join(STATE, "cloud-password.conf"), password_conf(CCM_USER, True))
    write_private(os.path.join(STATE, "cloud-no-lb.conf"), password_conf(NOLB_USER, False))

    write_private(os.path.join(STATE, "clouds.yaml"), """# openstack --os-cloud NAME ...
clouds:
  overcast-ccm:
    auth_type: v3applicationcredential
    auth:
      auth_url: %(auth)s
      application_credential_id: "%(cid)s"
      application_credential_secret: "%(csec)s"
    region_name: %(region)s
    identity_api_version: 3
  overcast-ccm-password:
    auth:
      auth_url: %(auth)s
      username: %(user)s
      password: "%(upass)s"
      project_id: %(pid)s
      user_domain_id: default
    region_name: %(region)s
    identity_api_version: 3
  overcast-admin:
    auth:
      auth_url: %(auth)s
      username: admin
      password: "%(apass)s"
      project_name: admin
      user_domain_id: default
      project_domain_id: default
    region_name: %(region)s
    identity_api_version: 3
""" % {"auth": AUTH_URL, "cid": cred["id"], "csec": cred["secret"], "region": REGION,
       "user": CCM_USER, "upass": E["CCM_PASS"], "pid": project.id,
       "apass": E["ADMIN_PASS"]})
    log("wrote %s/{openstack.env,cloud.conf,cloud-password.conf,clouds.yaml,base.json}"
        % STATE)


def cmd_wait_compute(since, timeout=180):
    """Waits until nova-compute on COMPUTE_HOST has reported after SINCE and its node and
    resource provider exist."""
    host = E["COMPUTE_HOST"]
    conn = admin_conn()
    deadline = time.time() + timeout
    last = "nothing yet"
    tries = 0
    while time.time() < deadline and tries < timeout:
        tries += 1
        try:
            svc = find_one(conn.compute.services(binary="nova-compute", host=host))
            if svc is None:
                last = "no nova-compute service on host %s" % host
            else:
                updated = svc.updated_at and datetime.datetime.fromisoformat(
                    svc.updated_at.replace("Z", "")).replace(tzinfo=datetime.timezone.utc)
                if svc.state != "up" or not updated or updated.timestamp() < since - 1:
                    last = "nova-compute state %s, last report %s" % (svc.state, svc.updated_at)
                else:
                    rps = list(conn.placement.resource_providers())
                    if not rps:
                        last = "no resource provider in placement yet"
                    else:
                        log("nova-compute on %s is up (reported %s), %d resource provider(s)"
                            % (host, svc.updated_at, len(rps)))
                        return
        except sdk_exc.SDKException as e:
            last = "error: %s" % e
        time.sleep(1)
    sys.exit("gave up after %ds (%d tries) waiting for nova-compute to register: %s"
             % (timeout, tries, last))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd = sys.argv[1]
    if cmd == "keystone":
        cmd_keystone()
    elif cmd == "resources":
        cmd_resources()
    elif cmd == "wait-compute":
        cmd_wait_compute(float(sys.argv[2]))
    else:
        sys.exit("unknown command %s\n%s" % (cmd, __doc__))


if __name__ == "__main__":
    main()
