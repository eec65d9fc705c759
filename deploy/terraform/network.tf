# One VCN with one public subnet. Ingress: SSH and the gateway port from the allowed networks only (and,
# with several gateways, the gateway port from the subnet itself, where the load balancer is).
resource "oci_core_vcn" "picoora" {
  compartment_id = var.compartment_ocid
  cidr_blocks    = [var.vcn_cidr]
  display_name   = "picoora-vcn"
  dns_label      = "picoora"
}

resource "oci_core_internet_gateway" "picoora" {
  compartment_id = var.compartment_ocid
  vcn_id         = oci_core_vcn.picoora.id
  display_name   = "picoora-igw"
  enabled        = true
}

# Oracle services (Vault secrets, Autonomous Database) are reached privately: the ADB access list
# names this VCN, which only works for traffic that arrives through a service gateway.
resource "oci_core_service_gateway" "picoora" {
  compartment_id = var.compartment_ocid
  vcn_id         = oci_core_vcn.picoora.id
  display_name   = "picoora-sgw"
  services {
    service_id = data.oci_core_services.all.services[0].id
  }
}

resource "oci_core_route_table" "picoora" {
  compartment_id = var.compartment_ocid
  vcn_id         = oci_core_vcn.picoora.id
  display_name   = "picoora-routes"
  route_rules {
    destination       = "0.0.0.0/0"
    destination_type  = "CIDR_BLOCK"
    network_entity_id = oci_core_internet_gateway.picoora.id
  }
  route_rules {
    destination       = data.oci_core_services.all.services[0].cidr_block
    destination_type  = "SERVICE_CIDR_BLOCK"
    network_entity_id = oci_core_service_gateway.picoora.id
  }
}

resource "oci_core_security_list" "picoora" {
  compartment_id = var.compartment_ocid
  vcn_id         = oci_core_vcn.picoora.id
  display_name   = "picoora-security-list"

  egress_security_rules {
    description = "The VM fetches packages, models and picoora itself"
    destination = "0.0.0.0/0"
    protocol    = "all"
  }

  dynamic "ingress_security_rules" {
    for_each = toset(var.ssh_allowed_cidrs)
    content {
      description = "SSH"
      protocol    = "6"
      source      = ingress_security_rules.value
      tcp_options {
        min = 22
        max = 22
      }
    }
  }

  dynamic "ingress_security_rules" {
    for_each = toset(local.gateway_cidrs)
    content {
      description = "picoora gateway"
      protocol    = "6"
      source      = ingress_security_rules.value
      tcp_options {
        min = var.gateway_port
        max = var.gateway_port
      }
    }
  }

  # The load balancer (in this subnet) reaches each gateway and its /ready health check.
  dynamic "ingress_security_rules" {
    for_each = local.fleet ? toset([local.subnet_cidr]) : toset([])
    content {
      description = "load balancer to the gateways"
      protocol    = "6"
      source      = ingress_security_rules.value
      tcp_options {
        min = var.gateway_port
        max = var.gateway_port
      }
    }
  }

  # Path MTU discovery ("fragmentation needed") from the same networks, so large replies are not lost.
  dynamic "ingress_security_rules" {
    for_each = toset(concat(var.ssh_allowed_cidrs, local.gateway_cidrs))
    content {
      description = "ICMP fragmentation needed"
      protocol    = "1"
      source      = ingress_security_rules.value
      icmp_options {
        type = 3
        code = 4
      }
    }
  }
}

resource "oci_core_subnet" "public" {
  compartment_id    = var.compartment_ocid
  vcn_id            = oci_core_vcn.picoora.id
  cidr_block        = local.subnet_cidr
  display_name      = "picoora-public"
  dns_label         = "public"
  route_table_id    = oci_core_route_table.picoora.id
  security_list_ids = [oci_core_security_list.picoora.id]
}
