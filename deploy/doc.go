// Package deploy reads the deployment files under deploy/ (kustomizations,
// compose demo, systemd unit) and the repository's Dockerfile the way their
// tools do, so that tests can check them: Build runs kustomize and decodes
// every object strictly into its typed Kubernetes struct, LoadCompose decodes
// the compose file, LoadUnit parses a systemd unit and LoadDockerfile a
// Dockerfile.
//
// Only tests import this package (its own and cmd/llmprobe's), so the
// llmprobe binary links no Kubernetes code.
package deploy
