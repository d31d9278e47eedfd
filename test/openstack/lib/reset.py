#!/usr/bin/python3
"""Returns the harness OpenStack to its base state between test runs.

Deletes, in every project but "service": load balancers (cascade), servers, server groups,
floating IPs, ports that no router or network owns, routers, networks and subnets that are
not the base ones, security groups other than "default"; removes extra interfaces, routes
and tags from the base router, and tags from the base networks and subnets; deletes the
VIP security groups Octavia left behind; deletes the Barbican containers and secrets of
the CCM's project (Barbican lists a project's own only: done as the CCM's user). Keeps the base networks, router, image, flavors,
users and credentials (their ids are in $STATE/base.json).

Every wait is bounded; the script says what it waited for when it gives up and exits 1
if anything could not be cleaned.
"""

import json
import os
import sys
import time

import openstack
from openstack import exceptions as sdk_exc

E = os.environ
STATE = E["STATE"]
AUTH_URL = "http://127.0.0.1:%s/v3" % E["KEYSTONE_PORT"]
DEADLINE_LB = 180
DEADLINE_SERVER = 120

problems = []
counts = {}


def log(msg):
    print("[reset %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def problem(msg):
    problems.append(msg)
    log("PROBLEM: " + msg)


def count(kind, n=1):
    counts[kind] = counts.get(kind, 0) + n


def wait_gone(what, ids, getter, seconds):
    """Polls getter(id) until every id is gone (None or 404), at most `seconds`."""
    pending = set(ids)
    deadline = time.time() + seconds
    tries = 0
    while pending and time.time() < deadline and tries < seconds * 2:
        tries += 1
        for i in list(pending):
            try:
                obj = getter(i)
            except sdk_exc.NotFoundException:
                obj = None
            if obj is None:
                pending.discard(i)
        if pending:
            time.sleep(0.5)
    if pending:
        problem("gave up after %ds (%d tries) waiting for %d %s to be deleted: %s"
                % (seconds, tries, len(pending), what, ", ".join(sorted(pending))))
    return not pending


def main():
    with open(os.path.join(STATE, "base.json")) as f:
        base = json.load(f)
    conn = openstack.connect(
        load_yaml_config=False, load_envvars=False,
        auth_url=AUTH_URL, username="admin", password=E["ADMIN_PASS"],
        project_name="admin", user_domain_id="default", project_domain_id="default",
        region_name=E["REGION"], identity_api_version="3")
    net = conn.network
    service = conn.identity.find_project("service", domain_id="default")
    service_id = service.id if service else None

    def ours(obj):
        return getattr(obj, "project_id", None) != service_id

    base_nets = {base["public_network_id"], base["network_id"]}
    base_subnets = {base["public_subnet_id"], base["subnet_id"]}
    base_router = base["router_id"]

    # 1. Load balancers, cascade. One in PENDING_* cannot be deleted yet: wait for it.
    lbs = list(conn.load_balancer.load_balancers())
    deadline = time.time() + 60
    for lb in lbs:
        tries = 0
        while lb.provisioning_status.startswith("PENDING_") and time.time() < deadline \
                and tries < 120:
            tries += 1
            time.sleep(0.5)
            try:
                lb = conn.load_balancer.get_load_balancer(lb.id)
            except sdk_exc.NotFoundException:
                break
        if lb.provisioning_status == "PENDING_DELETE":
            continue
        if lb.provisioning_status.startswith("PENDING_"):
            problem("load balancer %s stayed %s (waited 60s)" % (lb.id, lb.provisioning_status))
            continue
        try:
            conn.load_balancer.delete_load_balancer(lb.id, cascade=True)
            count("load balancers")
        except sdk_exc.NotFoundException:
            pass
    if lbs:
        wait_gone("load balancers", [lb.id for lb in lbs],
                  lambda i: conn.load_balancer.get_load_balancer(i), DEADLINE_LB)

    # 2. Servers (all projects).
    servers = list(conn.compute.servers(all_projects=True))
    for s in servers:
        try:
            conn.compute.delete_server(s.id)
            count("servers")
        except sdk_exc.NotFoundException:
            pass
    if servers:
        wait_gone("servers", [s.id for s in servers],
                  lambda i: conn.compute.get_server(i),
                  DEADLINE_SERVER)
    for g in conn.compute.server_groups(all_projects=True):
        conn.compute.delete_server_group(g.id, ignore_missing=True)
        count("server groups")

    # 3. Floating IPs.
    for fip in net.ips():
        net.delete_ip(fip.id, ignore_missing=True)
        count("floating IPs")

    # 4. Routers: the base router loses what tests added; other routers go.
    for r in net.routers():
        if r.id == base_router:
            changes = {}
            if r.routes:
                changes["routes"] = []
            if changes:
                net.update_router(r, **changes)
                count("base router routes cleared")
            if r.tags:
                net.set_tags(r, [])
            for p in net.ports(device_id=r.id, device_owner="network:router_interface"):
                subnets = {ip["subnet_id"] for ip in p.fixed_ips}
                if subnets & base_subnets:
                    continue
                net.remove_interface_from_router(r, port_id=p.id)
                count("base router interfaces removed")
            continue
        if not ours(r):
            continue
        if r.routes:
            net.update_router(r, routes=[])
        for p in net.ports(device_id=r.id, device_owner="network:router_interface"):
            net.remove_interface_from_router(r, port_id=p.id)
        if r.external_gateway_info:
            net.update_router(r, external_gateway_info={})
        net.delete_router(r.id, ignore_missing=True)
        count("routers")

    # 5. Ports no router or network owns (servers', Octavia VIPs left behind, tests' own).
    for p in net.ports():
        if not ours(p):
            continue
        owner = p.device_owner or ""
        if owner.startswith("network:"):
            continue
        try:
            net.delete_port(p.id, ignore_missing=True)
            count("ports")
        except sdk_exc.SDKException as e:
            problem("port %s (%s): %s" % (p.id, owner, e))

    # 6. Networks and subnets that are not the base ones; tags off the base ones.
    for s in net.subnets():
        if s.id in base_subnets:
            if s.tags:
                net.set_tags(s, [])
            continue
        # a test's subnet: in its own network, or added to a base network
        if ours(s) or s.network_id in base_nets:
            try:
                net.delete_subnet(s.id, ignore_missing=True)
                count("subnets")
            except sdk_exc.SDKException as e:
                problem("subnet %s: %s" % (s.id, e))
    for n in net.networks():
        if n.id in base_nets:
            if n.tags:
                net.set_tags(n, [])
            continue
        if not ours(n):
            continue
        try:
            net.delete_network(n.id, ignore_missing=True)
            count("networks")
        except sdk_exc.SDKException as e:
            problem("network %s: %s" % (n.id, e))

    # 7. Security groups other than "default"; Octavia's VIP groups of deleted LBs.
    live_lbs = {lb.id for lb in conn.load_balancer.load_balancers()}
    for sg in net.security_groups():
        if sg.name == "default":
            continue
        if not ours(sg):
            if sg.name.startswith("lb-") and sg.name[3:] not in live_lbs:
                net.delete_security_group(sg.id, ignore_missing=True)
                count("Octavia VIP security groups")
            continue
        try:
            net.delete_security_group(sg.id, ignore_missing=True)
            count("security groups")
        except sdk_exc.SDKException as e:
            problem("security group %s: %s" % (sg.id, e))

    # 8. Barbican: containers first (they name secrets), then secrets.
    ccm = openstack.connect(
        load_yaml_config=False, load_envvars=False,
        auth_url=AUTH_URL, username="ccm", password=E["CCM_PASS"],
        project_id=base["project_id"], user_domain_id="default",
        region_name=E["REGION"], identity_api_version="3")
    for kind, lister, deleter in (
            ("Barbican containers", ccm.key_manager.containers, ccm.key_manager.delete_container),
            ("Barbican secrets", ccm.key_manager.secrets, ccm.key_manager.delete_secret)):
        for obj in list(lister()):
            try:
                # the SDK's id of a listed secret or container is its whole ref
                deleter(str(obj.id).rstrip("/").rsplit("/", 1)[-1], ignore_missing=False)
                count(kind)
            except sdk_exc.SDKException as e:
                problem("%s %s: %s" % (kind, obj.id, e))

    done = ", ".join("%d %s" % (v, k) for k, v in counts.items()) or "nothing to delete"
    log(done)
    if problems:
        sys.exit("reset left %d problem(s):\n  %s" % (len(problems), "\n  ".join(problems)))


if __name__ == "__main__":
    main()
