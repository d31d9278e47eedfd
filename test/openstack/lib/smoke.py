#!/usr/bin/python3
"""Smoke test of the harness OpenStack, as the CCM would use it (application credential
of user ccm in project k8s): a server on the tenant network, a load balancer with a
listener, pool, member and health monitor, a floating IP on the VIP port. Prints how long
each took to become ACTIVE, then deletes what it created (reset.sh would too).
"""

import os
import sys
import time

import openstack

E = os.environ
TIMEOUT = 120


def log(msg):
    print("[smoke %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def wait_for(what, get, ok, bad=("ERROR",), seconds=TIMEOUT):
    t0 = time.time()
    tries = 0
    last = None
    while time.time() - t0 < seconds and tries < seconds * 5:
        tries += 1
        obj = get()
        last = ok(obj)
        if last is True:
            return obj, time.time() - t0
        if last in bad:
            sys.exit("%s went %s" % (what, last))
        time.sleep(0.2)
    sys.exit("gave up after %ds (%d tries) waiting for %s (last: %s)" % (seconds, tries, what, last))


def active(x):
    return True if x.provisioning_status == "ACTIVE" else x.provisioning_status


def main():
    conn = openstack.connect(
        load_yaml_config=False, load_envvars=False,
        auth_type="v3applicationcredential", auth_url=E["OS_AUTH_URL"],
        application_credential_id=E["OVERCAST_OS_APPLICATION_CREDENTIAL_ID"],
        application_credential_secret=E["OVERCAST_OS_APPLICATION_CREDENTIAL_SECRET"],
        region_name=E["OS_REGION_NAME"], identity_api_version="3")
    lbapi = conn.load_balancer
    subnet = E["OVERCAST_OS_SUBNET_ID"]
    created = {}
    try:
        t0 = time.time()
        srv = conn.compute.create_server(
            name="smoke-server", image_id=E["OVERCAST_OS_IMAGE_ID"],
            flavor_id=E["OVERCAST_OS_FLAVOR_ID"], networks=[{"uuid": E["OVERCAST_OS_NETWORK_ID"]}])
        created["server"] = srv.id
        srv, dt = wait_for("server", lambda: conn.compute.get_server(srv.id),
                           lambda s: True if s.status == "ACTIVE" and s.addresses else s.status)
        ip = srv.addresses[next(iter(srv.addresses))][0]["addr"]
        log("server ACTIVE in %.1fs with address %s" % (time.time() - t0, ip))

        def lb_get():
            return lbapi.get_load_balancer(created["lb"])

        t0 = time.time()
        lb = lbapi.create_load_balancer(name="smoke-lb", vip_subnet_id=subnet)
        created["lb"] = lb.id
        lb, dt = wait_for("load balancer", lb_get, active)
        log("load balancer ACTIVE in %.1fs, VIP %s on port %s" % (dt, lb.vip_address, lb.vip_port_id))

        t0 = time.time()
        lis = lbapi.create_listener(name="smoke-listener", load_balancer_id=lb.id, protocol="TCP",
                                    protocol_port=80, allowed_cidrs=["0.0.0.0/0"])
        wait_for("listener", lambda: lbapi.get_listener(lis.id),
                 active)
        log("listener ACTIVE in %.1fs" % (time.time() - t0))

        t0 = time.time()
        pool = lbapi.create_pool(name="smoke-pool", listener_id=lis.id, protocol="TCP",
                                 lb_algorithm="ROUND_ROBIN")
        wait_for("pool", lambda: lbapi.get_pool(pool.id),
                 active)
        log("pool ACTIVE in %.1fs" % (time.time() - t0))

        t0 = time.time()
        mem = lbapi.create_member(pool, address=ip, protocol_port=30080, subnet_id=subnet)
        wait_for("member", lambda: lbapi.get_member(mem.id, pool),
                 active)
        log("member ACTIVE in %.1fs" % (time.time() - t0))

        t0 = time.time()
        hm = lbapi.create_health_monitor(pool_id=pool.id, type="TCP", delay=5, timeout=3,
                                         max_retries=3)
        wait_for("health monitor", lambda: lbapi.get_health_monitor(hm.id),
                 active)
        log("health monitor ACTIVE in %.1fs" % (time.time() - t0))

        lb, _ = wait_for("load balancer", lb_get, active)
        t0 = time.time()
        fip = conn.network.create_ip(floating_network_id=E["OVERCAST_OS_PUBLIC_NETWORK_ID"],
                                     port_id=lb.vip_port_id)
        created["fip"] = fip.id
        log("floating IP %s on the VIP port in %.1fs (status %s: no data plane)"
            % (fip.floating_ip_address, time.time() - t0, fip.status))
        log("load balancer operating_status %s (no health manager)" % lb.operating_status)
    finally:
        t0 = time.time()
        if "fip" in created:
            conn.network.delete_ip(created["fip"], ignore_missing=True)
        if "lb" in created:
            try:
                wait_for("load balancer to settle", lambda: lbapi.get_load_balancer(created["lb"]),
                         lambda x: True if not x.provisioning_status.startswith("PENDING")
                         else x.provisioning_status, bad=())
            except SystemExit as e:
                log(str(e))
            lbapi.delete_load_balancer(created["lb"], cascade=True, ignore_missing=True)
        if "server" in created:
            conn.compute.delete_server(created["server"], ignore_missing=True)
        if "lb" in created:
            wait_for("load balancer deletion",
                     lambda: lbapi.find_load_balancer(created["lb"], ignore_missing=True),
                     lambda x: True if x is None else x.provisioning_status, bad=())
        if "server" in created:
            wait_for("server deletion",
                     lambda: conn.compute.find_server(created["server"], ignore_missing=True),
                     lambda x: True if x is None else x.status, bad=())
        log("cleaned up in %.1fs" % (time.time() - t0))


if __name__ == "__main__":
    main()
