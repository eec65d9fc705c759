# Optional: an Always Free Autonomous Database instead of Oracle AI Database Free on the VM.
# TLS without a wallet: the access list admits this VCN only (through the service gateway).
resource "oci_database_autonomous_database" "picoora" {
  count                       = var.use_autonomous_db ? 1 : 0
  compartment_id              = var.compartment_ocid
  db_name                     = "picoora${local.suffix}"
  display_name                = "picoora-${local.suffix}"
  admin_password              = local.adb_admin_password
  db_workload                 = "OLTP"
  db_version                  = var.adb_db_version
  is_free_tier                = true
  cpu_core_count              = 1
  data_storage_size_in_tbs    = 1
  is_auto_scaling_enabled     = false
  is_mtls_connection_required = false
  whitelisted_ips             = [oci_core_vcn.picoora.id]
}

locals {
  # The TLS (one-way, no wallet) connect descriptor of the LOW service: least contention for a chat app.
  adb_dsn = var.use_autonomous_db ? [
    for p in oci_database_autonomous_database.picoora[0].connection_strings[0].profiles : p.value
    if p.consumer_group == "LOW" && p.tls_authentication == "SERVER" && p.protocol == "TCPS" && p.host_format == "FQDN" && p.syntax_format == "LONG" && p.session_mode == "DIRECT"
  ][0] : ""
}
