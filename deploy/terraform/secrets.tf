# Secrets never travel in instance metadata (which any process on the VM can read, and anyone
# allowed to read the instance). Terraform puts them in a Vault; the VM reads them with its
# instance principal, which a policy allows for exactly these secrets. Passwords for Oracle AI
# Database Free are made on the VM itself and never leave it; the Autonomous Database's picoora user
# has one password for every gateway VM, so it is made here and kept in the Vault too.

resource "random_password" "gateway_token" {
  length  = 43
  special = false
}

resource "random_password" "adb_admin" {
  count            = var.use_autonomous_db && var.adb_admin_password == "" ? 1 : 0
  length           = 20
  special          = true
  override_special = "#_"
  min_upper        = 2
  min_lower        = 2
  min_numeric      = 2
  min_special      = 1
}

# Letters and digits only (the VM quotes it in CREATE USER: DDL takes no binds), after a letter.
resource "random_password" "adb_picoora" {
  count       = var.use_autonomous_db ? 1 : 0
  length      = 25
  special     = false
  min_upper   = 2
  min_lower   = 2
  min_numeric = 2
}

locals {
  adb_admin_password = var.use_autonomous_db ? (var.adb_admin_password != "" ? var.adb_admin_password : random_password.adb_admin[0].result) : ""
}

resource "oci_kms_vault" "picoora" {
  compartment_id = var.compartment_ocid
  display_name   = "picoora-${local.suffix}"
  vault_type     = "DEFAULT"
}

resource "oci_kms_key" "picoora" {
  compartment_id      = var.compartment_ocid
  display_name        = "picoora-secrets"
  management_endpoint = oci_kms_vault.picoora.management_endpoint
  protection_mode     = "SOFTWARE"
  key_shape {
    algorithm = "AES"
    length    = 32
  }
}

resource "oci_vault_secret" "gateway_token" {
  compartment_id = var.compartment_ocid
  vault_id       = oci_kms_vault.picoora.id
  key_id         = oci_kms_key.picoora.id
  secret_name    = "picoora-gateway-token-${local.suffix}"
  description    = "Bearer token of the picoora gateway"
  secret_content {
    content_type = "BASE64"
    content      = base64encode(random_password.gateway_token.result)
  }
}

resource "oci_vault_secret" "adb_admin_password" {
  count          = var.use_autonomous_db ? 1 : 0
  compartment_id = var.compartment_ocid
  vault_id       = oci_kms_vault.picoora.id
  key_id         = oci_kms_key.picoora.id
  secret_name    = "picoora-adb-admin-${local.suffix}"
  description    = "ADMIN password of picoora's Autonomous Database (the VM creates its own user with it)"
  secret_content {
    content_type = "BASE64"
    content      = base64encode(local.adb_admin_password)
  }
}

resource "oci_vault_secret" "adb_picoora_password" {
  count          = var.use_autonomous_db ? 1 : 0
  compartment_id = var.compartment_ocid
  vault_id       = oci_kms_vault.picoora.id
  key_id         = oci_kms_key.picoora.id
  secret_name    = "picoora-adb-user-${local.suffix}"
  description    = "Password of the picoora user in the Autonomous Database, shared by every gateway VM"
  secret_content {
    content_type = "BASE64"
    content      = base64encode("P${random_password.adb_picoora[0].result}")
  }
}

locals {
  secret_ids = concat([oci_vault_secret.gateway_token.id], oci_vault_secret.adb_admin_password[*].id,
  oci_vault_secret.adb_picoora_password[*].id)
}

resource "oci_identity_dynamic_group" "picoora" {
  provider       = oci.home
  compartment_id = var.tenancy_ocid
  name           = "picoora-${local.suffix}"
  description    = "The picoora VMs, so they can read their secrets"
  matching_rule  = "ANY {${join(", ", [for vm in oci_core_instance.picoora : "instance.id = '${vm.id}'"])}}"
}

resource "oci_identity_policy" "picoora" {
  provider       = oci.home
  compartment_id = var.compartment_ocid
  name           = "picoora-${local.suffix}"
  description    = "The picoora VMs read their gateway token (and the ADB passwords), nothing else"
  statements = [for id in local.secret_ids :
    "Allow dynamic-group ${oci_identity_dynamic_group.picoora.name} to read secret-bundles in compartment id ${var.compartment_ocid} where target.secret.id = '${id}'"
  ]
}
