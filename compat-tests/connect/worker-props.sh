# Sourced by connect/run.sh and connect/client-bugs/side-by-side.sh: connect_worker_props
# BOOTSTRAP prints the worker settings they share: strings in and out, quick offset commits, the
# FileStream plugin in its own class loader (plugin/pom.xml says why).
connect_plugin_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/plugin"
connect_worker_props() {
    cat <<EOP
bootstrap.servers=$1
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.storage.StringConverter
offset.flush.interval.ms=500
listeners=http://127.0.0.1:0
plugin.path=$connect_plugin_dir
plugin.discovery=service_load
EOP
}
