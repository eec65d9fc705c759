locals {
  # Plain KEY=value lines for the set-up script (read as data, never sourced). No secrets: OCIDs only.
  setup_settings = {
    database_mode        = var.use_autonomous_db ? "adb" : "freepdb"
    ollama_model         = var.ollama_model
    gateway_port         = tostring(var.gateway_port)
    gateway_exposed      = length(local.gateway_cidrs) > 0 ? "yes" : "no"
    database_required    = local.fleet ? "yes" : "no"
    gateway_token_secret = oci_vault_secret.gateway_token.id
    adb_admin_secret     = var.use_autonomous_db ? oci_vault_secret.adb_admin_password[0].id : ""
    adb_user_secret      = var.use_autonomous_db ? oci_vault_secret.adb_picoora_password[0].id : ""
    adb_dsn              = local.adb_dsn
    picoora_repository   = var.picoora_repository
    picoora_ref          = var.picoora_ref
  }
  user_data = templatefile("${path.module}/cloud-init.yaml.tftpl", {
    settings     = join("\n", [for key, value in local.setup_settings : "${key}=${value}"])
    setup_script = file("${path.module}/scripts/setup.sh")
  })
}

# One VM, or gateway_count of them (the same set-up each) sharing the Autonomous Database behind lb.tf.
resource "oci_core_instance" "picoora" {
  count               = var.gateway_count
  compartment_id      = var.compartment_ocid
  availability_domain = data.oci_identity_availability_domains.all.availability_domains[count.index % length(data.oci_identity_availability_domains.all.availability_domains)].name
  display_name        = local.fleet ? "picoora-${count.index + 1}" : "picoora"
  shape               = var.instance_shape

  dynamic "shape_config" {
    for_each = local.is_flex ? [1] : []
    content {
      ocpus         = var.instance_ocpus
      memory_in_gbs = var.instance_memory_in_gbs
    }
  }

  source_details {
    source_type             = "image"
    source_id               = data.oci_core_images.oracle_linux_9.images[0].id
    boot_volume_size_in_gbs = var.boot_volume_size_in_gbs
  }

  create_vnic_details {
    subnet_id        = oci_core_subnet.public.id
    assign_public_ip = true
    hostname_label   = local.fleet ? "picoora${count.index + 1}" : "picoora"
  }

  # Data between the instance and its boot volume is encrypted in transit.
  is_pv_encryption_in_transit_enabled = true
  launch_options {
    is_pv_encryption_in_transit_enabled = true
  }

  # Only IMDS v2 (an Authorization header is required), never the legacy v1 endpoints.
  instance_options {
    are_legacy_imds_endpoints_disabled = true
  }

  agent_config {
    is_monitoring_disabled = false
    is_management_disabled = false
  }

  metadata = {
    ssh_authorized_keys = trimspace(var.ssh_public_key)
    user_data           = base64gzip(local.user_data)
  }

  freeform_tags = { app = "picoora" }

  lifecycle {
    # A newer image or edited set-up must not replace a running VM (and its data) on the next apply.
    ignore_changes = [source_details[0].source_id, metadata["user_data"]]
  }
}

# The one VM of earlier versions of this stack is the first of gateway_count: kept, never replaced.
moved {
  from = oci_core_instance.picoora
  to   = oci_core_instance.picoora[0]
}
