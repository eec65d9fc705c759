# Optional: gateway_count gateways behind one OCI flexible load balancer (the Always Free tier has one at
# 10 Mbps), all on the Autonomous Database. Turns of one chat keep their order whichever gateway gets
# them (session leases in the database); the scheduler, the heartbeat and each long-polling channel run
# on one gateway at a time, taken over by another within a lease period when it stops.
resource "oci_load_balancer_load_balancer" "picoora" {
  count          = local.fleet ? 1 : 0
  compartment_id = var.compartment_ocid
  display_name   = "picoora-${local.suffix}"
  shape          = "flexible"
  shape_details {
    minimum_bandwidth_in_mbps = 10
    maximum_bandwidth_in_mbps = 10
  }
  subnet_ids = [oci_core_subnet.public.id]
  is_private = false
}

resource "oci_load_balancer_backend_set" "picoora" {
  count            = local.fleet ? 1 : 0
  load_balancer_id = oci_load_balancer_load_balancer.picoora[0].id
  name             = "picoora-gateways"
  # A turn can stream for a minute: the gateway with the fewest open connections takes the next one.
  policy = "LEAST_CONNECTIONS"
  # /ready without a token answers 200 or 503 and nothing else: 503 while the gateway's database, model
  # or a channel fails, or while it shuts down, so traffic goes to the others meanwhile.
  health_checker {
    protocol          = "HTTP"
    port              = var.gateway_port
    url_path          = "/ready"
    return_code       = 200
    interval_ms       = 10000
    timeout_in_millis = 5000 # each readiness check gives up after 3 s
    retries           = 3
  }
  # A browser's requests stay on one gateway (the web chat's stream resumes where it was), an API client
  # without cookies spreads; a stopped gateway's browsers move to another.
  lb_cookie_session_persistence_configuration {
    cookie_name      = "X-Oracle-OCI-LB"
    disable_fallback = false
    is_http_only     = true
    is_secure        = false # the listener is plain HTTP, as the single VM's gateway port is
  }
}

resource "oci_load_balancer_backend" "picoora" {
  count            = local.fleet ? var.gateway_count : 0
  load_balancer_id = oci_load_balancer_load_balancer.picoora[0].id
  backendset_name  = oci_load_balancer_backend_set.picoora[0].name
  ip_address       = oci_core_instance.picoora[count.index].private_ip
  port             = var.gateway_port
}

resource "oci_load_balancer_listener" "picoora" {
  count                    = local.fleet ? 1 : 0
  load_balancer_id         = oci_load_balancer_load_balancer.picoora[0].id
  name                     = "picoora-gateway"
  default_backend_set_name = oci_load_balancer_backend_set.picoora[0].name
  port                     = var.gateway_port
  protocol                 = "HTTP"
  connection_configuration {
    idle_timeout_in_seconds = 300 # streamed turns and MCP sessions outlast the 60 s default
  }
}

locals {
  # Where clients reach the gateway: the load balancer's public address, else the one VM's.
  gateway_host = local.fleet ? oci_load_balancer_load_balancer.picoora[0].ip_address_details[0].ip_address : oci_core_instance.picoora[0].public_ip
}
