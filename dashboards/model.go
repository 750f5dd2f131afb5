package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// SchemaVersion is the Grafana dashboard schema version the dashboards are
// written in (Grafana 12).
const SchemaVersion = 41

// DatasourceRef is the datasource every panel, target, variable and
// annotation uses: the dashboard's ${datasource} variable, never the UID of
// a datasource of some installation.
var DatasourceRef = &Datasource{Type: "prometheus", UID: "${datasource}"}

// Datasource references a Grafana datasource.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Dashboard is a Grafana dashboard in the JSON model of SchemaVersion. Only
// the fields llmprobe's dashboards use are modelled. Build one with the
// functions of this package; Render serialises it.
type Dashboard struct {
	Annotations          Annotations    `json:"annotations"`
	Description          string         `json:"description"`
	Editable             bool           `json:"editable"`
	FiscalYearStartMonth int            `json:"fiscalYearStartMonth"`
	GraphTooltip         int            `json:"graphTooltip"`
	ID                   *int           `json:"id"`
	Links                []Link         `json:"links"`
	Panels               []*Panel       `json:"panels"`
	Refresh              string         `json:"refresh"`
	SchemaVersion        int            `json:"schemaVersion"`
	Tags                 []string       `json:"tags"`
	Templating           Templating     `json:"templating"`
	Time                 TimeRange      `json:"time"`
	Timepicker           map[string]any `json:"timepicker"`
	Timezone             string         `json:"timezone"`
	Title                string         `json:"title"`
	UID                  string         `json:"uid"`
	Version              int            `json:"version"`

	// File is the file name the dashboard is written to (not serialised).
	File string `json:"-"`
}

// Annotations holds the dashboard's annotation queries.
type Annotations struct {
	List []Annotation `json:"list"`
}

// Annotation is one annotation query. Built-in is Grafana's own
// "Annotations & Alerts" entry; the others query Prometheus.
type Annotation struct {
	BuiltIn         int            `json:"builtIn,omitempty"`
	Datasource      *Datasource    `json:"datasource"`
	Enable          bool           `json:"enable"`
	Expr            string         `json:"expr,omitempty"`
	Hide            bool           `json:"hide"`
	IconColor       string         `json:"iconColor"`
	Name            string         `json:"name"`
	Step            string         `json:"step,omitempty"`
	TagKeys         string         `json:"tagKeys,omitempty"`
	TextFormat      string         `json:"textFormat,omitempty"`
	TitleFormat     string         `json:"titleFormat,omitempty"`
	UseValueForTime bool           `json:"useValueForTime,omitempty"`
	Target          map[string]any `json:"target,omitempty"`
	Type            string         `json:"type,omitempty"`
}

// Link is a dashboard link; llmprobe's dashboards link to each other by tag.
type Link struct {
	AsDropdown  bool     `json:"asDropdown"`
	IncludeVars bool     `json:"includeVars"`
	KeepTime    bool     `json:"keepTime"`
	Tags        []string `json:"tags"`
	Title       string   `json:"title"`
	Type        string   `json:"type"`
}

// Templating holds the dashboard variables.
type Templating struct {
	List []Variable `json:"list"`
}

// Variable is a dashboard variable: the datasource picker or a label_values
// query.
type Variable struct {
	AllValue    string         `json:"allValue,omitempty"`
	Current     map[string]any `json:"current"`
	Datasource  *Datasource    `json:"datasource,omitempty"`
	Definition  string         `json:"definition,omitempty"`
	Description string         `json:"description,omitempty"`
	Hide        int            `json:"hide"`
	IncludeAll  bool           `json:"includeAll"`
	Label       string         `json:"label"`
	Multi       bool           `json:"multi"`
	Name        string         `json:"name"`
	Options     []any          `json:"options"`
	Query       any            `json:"query"`
	Refresh     int            `json:"refresh"`
	Regex       string         `json:"regex"`
	Sort        int            `json:"sort,omitempty"`
	Type        string         `json:"type"`
}

// TimeRange is the dashboard's default time range.
type TimeRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// GridPos places a panel on the 24-column grid.
type GridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

// Panel is a dashboard panel (timeseries, stat, heatmap, text) or a row.
type Panel struct {
	Collapsed   *bool          `json:"collapsed,omitempty"`
	Datasource  *Datasource    `json:"datasource,omitempty"`
	Description string         `json:"description,omitempty"`
	FieldConfig *FieldConfig   `json:"fieldConfig,omitempty"`
	GridPos     GridPos        `json:"gridPos"`
	ID          int            `json:"id"`
	Options     map[string]any `json:"options,omitempty"`
	Panels      []*Panel       `json:"panels,omitempty"`
	Targets     []Target       `json:"targets,omitempty"`
	Title       string         `json:"title"`
	// Transformations are Grafana's data transformations (tables that merge
	// several queries).
	Transformations []map[string]any `json:"transformations,omitempty"`
	Type            string           `json:"type"`
}

// FieldConfig is a panel's field configuration.
type FieldConfig struct {
	Defaults  FieldDefaults `json:"defaults"`
	Overrides []Override    `json:"overrides"`
}

// FieldDefaults are the default field options of a panel.
type FieldDefaults struct {
	Color      map[string]any `json:"color,omitempty"`
	Custom     map[string]any `json:"custom,omitempty"`
	Decimals   *int           `json:"decimals,omitempty"`
	Mappings   []any          `json:"mappings"`
	Max        *float64       `json:"max,omitempty"`
	Min        *float64       `json:"min,omitempty"`
	Thresholds Thresholds     `json:"thresholds"`
	Unit       string         `json:"unit,omitempty"`
}

// Thresholds are a panel's thresholds (absolute steps; the first has a nil
// value, meaning minus infinity).
type Thresholds struct {
	Mode  string `json:"mode"`
	Steps []Step `json:"steps"`
}

// Step is one threshold step.
type Step struct {
	Color string   `json:"color"`
	Value *float64 `json:"value"`
}

// Override changes field options of the fields a matcher selects.
type Override struct {
	Matcher    map[string]any   `json:"matcher"`
	Properties []map[string]any `json:"properties"`
}

// Target is one Prometheus query of a panel.
type Target struct {
	Datasource   *Datasource `json:"datasource"`
	EditorMode   string      `json:"editorMode"`
	Expr         string      `json:"expr"`
	Format       string      `json:"format,omitempty"`
	Instant      bool        `json:"instant,omitempty"`
	LegendFormat string      `json:"legendFormat"`
	Range        bool        `json:"range"`
	RefID        string      `json:"refId"`
}

// Render returns the dashboard as indented JSON with a final newline, the
// form the committed files have. The dashboards of All come with panel ids
// and grid positions assigned.
func Render(d *Dashboard) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("render dashboard %s: %w", d.UID, err)
	}
	return buf.Bytes(), nil
}
