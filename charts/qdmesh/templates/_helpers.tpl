{{/* Full name of the release's objects: the release name, with "-qdmesh" unless it has it. */}}
{{- define "qdmesh.fullname" -}}
{{- if contains "qdmesh" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-qdmesh" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "qdmesh.version" -}}
{{- .Chart.AppVersion | default .Chart.Version -}}
{{- end -}}

{{- define "qdmesh.labels" -}}
app.kubernetes.io/name: qdmesh-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
app.kubernetes.io/part-of: qdmesh
app.kubernetes.io/version: {{ include "qdmesh.version" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "qdmesh.selectorLabels" -}}
app.kubernetes.io/name: qdmesh-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "qdmesh.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "qdmesh.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* The namespaces a namespace-scoped operator watches (the release's when none are given). */}}
{{- define "qdmesh.watchNamespaces" -}}
{{- if .Values.watch.namespaces -}}
{{- join "," .Values.watch.namespaces -}}
{{- else -}}
{{- .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* Rules for what the operator manages inside a namespace (Role or ClusterRole). */}}
{{- define "qdmesh.namespacedRules" -}}
# Its own custom resources: read and watch, finalizers and status; never spec writes
# (patch is how kopf records its finalizers and progress annotations).
- apiGroups: ["qdmesh.io"]
  resources: ["routermeshes", "linkroutes", "autolinks", "vhostpolicies", "meshaccessgrants"]
  verbs: ["get", "list", "watch", "patch", "update"]
# A grant's redemptions are counted in its status (update: with the resourceVersion read).
- apiGroups: ["qdmesh.io"]
  resources: ["routermeshes/status", "linkroutes/status", "autolinks/status", "vhostpolicies/status",
              "meshaccessgrants/status"]
  verbs: ["get", "patch", "update"]
# Owner references with blockOwnerDeletion need update on the owner's finalizers.
- apiGroups: ["qdmesh.io"]
  resources: ["routermeshes/finalizers", "linkroutes/finalizers", "autolinks/finalizers",
              "vhostpolicies/finalizers", "meshaccessgrants/finalizers"]
  verbs: ["update"]
# MeshLinks: read and watched, finalizers and status as the others; the Secrets they name
# (their token) are read, and the Secrets of what they redeemed are written (see secrets below).
- apiGroups: ["qdmesh.io"]
  resources: ["meshlinks"]
  verbs: ["get", "list", "watch", "patch", "update"]
- apiGroups: ["qdmesh.io"]
  resources: ["meshlinks/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: ["qdmesh.io"]
  resources: ["meshlinks/finalizers"]
  verbs: ["update"]
# What a RouterMesh becomes.
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# The web console of a RouterMesh with spec.console.enabled (deleted when it is turned off),
# and its edge groups (spec.edgeGroups: a Deployment or a DaemonSet each, removed with the group).
- apiGroups: ["apps"]
  resources: ["deployments", "daemonsets"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["services", "configmaps"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# spec.linkAccess of types Ingress (TLS passthrough) and Route (OpenShift).
- apiGroups: ["networking.k8s.io"]
  resources: ["ingresses"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["route.openshift.io"]
  resources: ["routes"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# Router pods: found by label, read for per-router status; reached through the router Service.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch"]
# TLS and SASL material named by RouterMeshes (and, with manageSecrets, the inter-router
# certificates the operator issues itself, what MeshLinks redeem (<link>-credentials and each
# linked mesh's <mesh>-links), and the link CAs, grant tokens and client CAs of meshes that
# accept links: without manageSecrets no mesh can link to or accept another).
- apiGroups: [""]
  resources: ["secrets"]
  verbs: {{ if .Values.rbac.manageSecrets }}["get", "list", "watch", "create", "update", "patch", "delete"]{{ else }}["get", "list", "watch"]{{ end }}
- apiGroups: ["", "events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- if .Values.rbac.certManager }}
- apiGroups: ["cert-manager.io"]
  resources: ["certificates", "issuers"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
{{- end }}
{{- end -}}

{{/* Checks the schema cannot phrase clearly: each failure names the value and what to do. */}}
{{- define "qdmesh.validate" -}}
{{- if eq .Values.image.tag "latest" -}}
{{- fail "image.tag: 'latest' is not allowed; qdmesh images are tagged with the package version (leave image.tag empty for the chart's appVersion)" -}}
{{- end -}}
{{- with .Values.routerImage -}}
{{- $last := last (splitList "/" .) -}}
{{- if not (or (contains ":" $last) (contains "@" $last)) -}}
{{- fail (printf "routerImage: %q has no tag; name a version (for example qdmesh/router:1.2.3) or a digest" .) -}}
{{- end -}}
{{- if hasSuffix ":latest" . -}}
{{- fail (printf "routerImage: %q uses the 'latest' tag; name a version (for example qdmesh/router:1.2.3) or a digest" .) -}}
{{- end -}}
{{- end -}}
{{- if and (gt (int .Values.operator.replicas) 1) (not .Values.operator.leaderElection) -}}
{{- fail (printf "operator.replicas: %d replicas need operator.leaderElection=true (without a Lease they would all reconcile)" (int .Values.operator.replicas)) -}}
{{- end -}}
{{- if and (eq .Values.watch.scope "cluster") .Values.watch.namespaces -}}
{{- fail "watch.namespaces: only used with watch.scope=namespace (watch.scope=cluster watches every namespace)" -}}
{{- end -}}
{{- end -}}
