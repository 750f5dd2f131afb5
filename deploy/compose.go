package deploy

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Compose is the part of the Compose file format
// (https://compose-spec.io) the demo stack uses. LoadCompose rejects any
// other key, so a misspelt one fails instead of being ignored.
type Compose struct {
	Name     string                    `json:"name"`
	Services map[string]ComposeService `json:"services"`
	Volumes  map[string]struct{}       `json:"volumes,omitempty"`
}

// ComposeService is one service of a Compose file.
type ComposeService struct {
	Image       string            `json:"image,omitempty"`
	Build       *ComposeBuild     `json:"build,omitempty"`
	Command     []string          `json:"command,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
	Volumes     []string          `json:"volumes,omitempty"`
	Ports       []string          `json:"ports,omitempty"`
	DependsOn   []string          `json:"depends_on,omitempty"`
	ReadOnly    bool              `json:"read_only,omitempty"`
	Restart     string            `json:"restart,omitempty"`
}

// ComposeBuild is a service's build section.
type ComposeBuild struct {
	Context    string `json:"context"`
	Dockerfile string `json:"dockerfile,omitempty"`
}

// Mount is one entry of a service's volumes, short syntax
// (SOURCE:TARGET[:ro]).
type Mount struct {
	// Source is a host path (relative to the Compose file when it starts
	// with . or ..) or a named volume.
	Source string
	// Target is the path in the container.
	Target string
	// ReadOnly is true for :ro.
	ReadOnly bool
}

// Bind reports whether the mount is a bind mount of a host path (rather
// than a named volume).
func (m Mount) Bind() bool {
	return strings.HasPrefix(m.Source, ".") || strings.HasPrefix(m.Source, "/")
}

// Mounts parses the service's volumes.
func (s ComposeService) Mounts() ([]Mount, error) {
	var ms []Mount
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
			return nil, fmt.Errorf("volume %q: want SOURCE:TARGET[:ro]", v)
		}
		m := Mount{Source: parts[0], Target: parts[1]}
		if len(parts) == 3 {
			if parts[2] != "ro" && parts[2] != "rw" {
				return nil, fmt.Errorf("volume %q: mode %q is not ro or rw", v, parts[2])
			}
			m.ReadOnly = parts[2] == "ro"
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// LoadCompose reads a Compose file and decodes it strictly into Compose.
func LoadCompose(path string) (*Compose, error) {
	c := &Compose{}
	if err := LoadStrict(path, c); err != nil {
		return nil, err
	}
	return c, nil
}

// LoadStrict reads a YAML file and decodes it into v (a pointer to a struct
// with json tags) strictly: an unknown, misspelt (also in case) or duplicate
// key is an error.
func LoadStrict(path string, v any) error {
	data, err := readFile(path)
	if err != nil {
		return err
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	strict, err := json.UnmarshalStrict(j, v, json.DisallowDuplicateFields, json.DisallowUnknownFields)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(strict) > 0 {
		return fmt.Errorf("%s: %w", path, errors.Join(strict...))
	}
	return nil
}
