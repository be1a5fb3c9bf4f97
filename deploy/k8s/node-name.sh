#!/bin/sh
# Runs "$@" with LLMBOX_NODE_NAME made from the Kubernetes node's name
# (K8S_NODE_NAME, from the downward API's spec.nodeName).
#
# Why: a node name prefixes the ids of its sandboxes ("n1.<id>") so a
# balancer can route by id, so llmbox accepts only [a-z0-9-], at most 63.
# Kubernetes node names are DNS names (ip-10-0-1-2.ec2.internal, up to 253
# characters). The mapping is the same in every container of the pod and
# across restarts of the pod on the same host (a restarted node cleans up
# what its earlier run left under the same name):
#   - lower case, every character outside [a-z0-9-] becomes '-';
#   - longer than 63: the first 54 characters, '-', and 8 hex digits of the
#     sha256 of the whole name, so two long names stay apart.
set -eu
raw=${K8S_NODE_NAME:-}
if [ -z "$raw" ]; then
    echo "node-name.sh: K8S_NODE_NAME is empty (the pod spec sets it from spec.nodeName)" >&2
    exit 2
fi
name=$(printf '%s' "$raw" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9-' '-')
name=${name#-}
if [ ${#name} -gt 63 ]; then
    sum=$(printf '%s' "$raw" | sha256sum | cut -c1-8)
    name=$(printf '%s' "$name" | cut -c1-54)-$sum
fi
LLMBOX_NODE_NAME=$name
export LLMBOX_NODE_NAME
exec "$@"
