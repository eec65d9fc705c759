output "instance_public_ip" {
  description = "The (first) VM's public address."
  value       = oci_core_instance.picoora[0].public_ip
}

output "ssh_command" {
  description = "Log in to the VM."
  value       = "ssh opc@${oci_core_instance.picoora[0].public_ip}"
}

output "setup_log_command" {
  description = "Follow the first-boot set-up (about 10-20 minutes; it ends with \"picoora is ready\")."
  value       = "ssh opc@${oci_core_instance.picoora[0].public_ip} sudo tail -f /var/log/picoora-setup.log"
}

output "instance_public_ips" {
  description = "Every gateway VM's public address (one per gateway_count)."
  value       = oci_core_instance.picoora[*].public_ip
}

output "gateway_url" {
  description = "Where clients reach the gateway: the load balancer with several gateways, else the VM."
  value       = "http://${local.gateway_host}:${var.gateway_port}"
}

output "health_url" {
  description = "The gateway's health check (from an allowed network; else through ssh -L)."
  value       = "http://${local.gateway_host}:${var.gateway_port}/health"
}

output "chat_command" {
  description = "Chat in the terminal on the VM."
  value       = "ssh -t opc@${oci_core_instance.picoora[0].public_ip} .local/bin/picoora agent"
}

output "database_mode" {
  description = "Where picoora stores: Oracle AI Database Free on the VM (freepdb) or the Autonomous Database (adb)."
  value       = var.use_autonomous_db ? "adb" : "freepdb"
}

output "gateway_token" {
  description = "The gateway's bearer token (terraform output -raw gateway_token)."
  value       = random_password.gateway_token.result
  sensitive   = true
}

output "adb_admin_password" {
  description = "ADMIN password of the Autonomous Database (empty without one)."
  value       = local.adb_admin_password
  sensitive   = true
}
