package dashboards

import (
	"fmt"
	"maps"
	"slices"
)

// Tag is the tag every llmprobe dashboard carries; the dashboards link to
// each other through it.
const Tag = "llmprobe"

// sel is the label selector of llmprobe series for the chosen targets and
// probes. Server (engine) series are selected through serverExpr
// (server.go).
const (
	sel = `cluster=~"$cluster", target=~"$target", probe=~"$probe"`
	tp  = `{{target}} / {{probe}}`
)

// section is a row of the dashboard and the panels under it. Panels are laid
// out left to right in the order given, wrapping at 24 columns.
type section struct {
	title     string
	collapsed bool
	panels    []*Panel
}

// newDashboard assembles a dashboard with llmprobe's variables, links and
// the given annotations and sections, and assigns panel ids and grid
// positions.
func newDashboard(file, uid, title, description string, annotations []Annotation, sections ...section) *Dashboard {
	d := &Dashboard{
		Annotations: Annotations{List: append([]Annotation{{
			BuiltIn:    1,
			Datasource: &Datasource{Type: "grafana", UID: "-- Grafana --"},
			Enable:     true,
			Hide:       true,
			IconColor:  "rgba(0, 211, 255, 1)",
			Name:       "Annotations & Alerts",
			Type:       "dashboard",
		}}, annotations...)},
		Description:  description,
		Editable:     true,
		GraphTooltip: 1, // shared crosshair: one time axis across panels
		Links: []Link{{
			AsDropdown: true, IncludeVars: true, KeepTime: true,
			Tags: []string{Tag}, Title: "llmprobe", Type: "dashboards",
		}},
		Refresh:       "30s",
		SchemaVersion: SchemaVersion,
		Tags:          []string{Tag},
		Templating:    Templating{List: variables()},
		Time:          TimeRange{From: "now-3h", To: "now"},
		Timepicker:    map[string]any{},
		Timezone:      "browser",
		Title:         title,
		UID:           uid,
		Version:       1,
		File:          file,
	}
	id, y := 1, 0
	for _, s := range sections {
		collapsed := s.collapsed
		row := &Panel{Collapsed: &collapsed, GridPos: GridPos{H: 1, W: 24, X: 0, Y: y}, ID: id, Title: s.title, Type: "row"}
		id++
		y++
		d.Panels = append(d.Panels, row)
		x, rowH := 0, 0
		for _, p := range s.panels {
			if x+p.GridPos.W > 24 {
				x, y, rowH = 0, y+rowH, 0
			}
			p.GridPos.X, p.GridPos.Y = x, y
			p.ID = id
			id++
			x += p.GridPos.W
			rowH = max(rowH, p.GridPos.H)
			if collapsed {
				row.Panels = append(row.Panels, p)
			} else {
				d.Panels = append(d.Panels, p)
			}
		}
		y += rowH
		if collapsed {
			// A collapsed row keeps its panels' positions for when it opens;
			// the rows after it start right below it.
			y = row.GridPos.Y + 1
		}
	}
	return d
}

// variables are the datasource picker and the cluster, model, target and
// probe filters. Targets are listed from llmprobe_target_info, so choosing a model
// narrows them; "All" matches every value (also targets whose info is not
// known yet).
func variables() []Variable {
	all := map[string]any{"selected": true, "text": []string{"All"}, "value": []string{"$__all"}}
	q := func(name, label, query, description string) Variable {
		return Variable{
			AllValue:    ".*",
			Current:     all,
			Datasource:  DatasourceRef,
			Definition:  query,
			Description: description,
			IncludeAll:  true,
			Label:       label,
			Multi:       true,
			Name:        name,
			Options:     []any{},
			Query: map[string]any{
				"qryType": 1,
				"query":   query,
				"refId":   "PrometheusVariableQueryEditor-VariableQuery",
			},
			Refresh: 2, // on time range change
			Sort:    1,
			Type:    "query",
		}
	}
	return []Variable{
		{
			Current:     map[string]any{},
			Description: "Prometheus data source with llmprobe's metrics and recording rules.",
			Label:       "Data source",
			Name:        "datasource",
			Options:     []any{},
			Query:       "prometheus",
			Refresh:     1,
			Type:        "datasource",
		},
		q("cluster", "Cluster", `label_values(llmprobe_build_info, cluster)`,
			"Cluster (the external or target label cluster, when several Prometheus servers feed one Thanos, Mimir or "+
				"VictoriaMetrics; All also matches series without it). docs/scaling.md."),
		q("model", "Model", `label_values(llmprobe_target_info{cluster=~"$cluster"}, model)`,
			"Served model name (llmprobe_target_info's model)."),
		q("target", "Target", `label_values(llmprobe_target_info{cluster=~"$cluster", model=~"$model"}, target)`,
			"llmprobe target (the name in its configuration)."),
		q("probe", "Probe", `label_values(llmprobe_requests_in_flight{cluster=~"$cluster", target=~"$target"}, probe)`,
			"llmprobe probe of the chosen targets."),
	}
}

// alertAnnotation marks the time ranges where the named alerts fire.
func alertAnnotation(name, color, alertRegex string) Annotation {
	expr := fmt.Sprintf(`ALERTS{alertname=~"%s", alertstate="firing", %s}`, alertRegex, sel)
	return Annotation{
		Datasource:  DatasourceRef,
		Enable:      true,
		Expr:        expr,
		IconColor:   color,
		Name:        name,
		Step:        "30s",
		TagKeys:     "alertname,target,probe",
		TextFormat:  "{{alertname}}: {{target}} / {{probe}}",
		TitleFormat: name,
		Target: map[string]any{
			"expr":  expr,
			"refId": "Anno",
		},
	}
}

// q is a range query with a legend.
func q(expr, legend string) Target {
	return Target{Datasource: DatasourceRef, EditorMode: "code", Expr: expr, LegendFormat: legend, Range: true}
}

// instant is an instant query (stat panels).
func instant(expr, legend string) Target {
	return Target{Datasource: DatasourceRef, EditorMode: "code", Expr: expr, Instant: true, LegendFormat: legend}
}

func withRefIDs(ts []Target) []Target {
	for i := range ts {
		ts[i].RefID = string(rune('A' + i))
	}
	return ts
}

func fptr(v float64) *float64 { return &v }

// steps builds absolute thresholds: a base color, then (value, color) pairs.
func steps(base string, pairs ...any) Thresholds {
	t := Thresholds{Mode: "absolute", Steps: []Step{{Color: base}}}
	for i := 0; i+1 < len(pairs); i += 2 {
		t.Steps = append(t.Steps, Step{Color: pairs[i+1].(string), Value: fptr(pairs[i].(float64))})
	}
	return t
}

// panel is a panel of type typ, width w of 24 and h high: field defaults
// d (without value mappings), options o, and the targets with their refIds.
func panel(typ, title, description string, w, h int, d FieldDefaults, o map[string]any, targets []Target) *Panel {
	d.Mappings = []any{}
	return &Panel{
		Datasource:  DatasourceRef,
		Description: description,
		FieldConfig: &FieldConfig{Defaults: d, Overrides: []Override{}},
		GridPos:     GridPos{H: h, W: w},
		Options:     o,
		Targets:     withRefIDs(targets),
		Title:       title,
		Type:        typ,
	}
}

// timeseries is a line chart, width w of 24, 8 high.
func timeseries(title, description, unit string, w int, targets ...Target) *Panel {
	return panel("timeseries", title, description, w, 8, FieldDefaults{
		Color: map[string]any{"mode": "palette-classic"},
		Custom: map[string]any{
			"axisBorderShow":    false,
			"axisPlacement":     "auto",
			"drawStyle":         "line",
			"fillOpacity":       10,
			"gradientMode":      "none",
			"lineInterpolation": "linear",
			"lineWidth":         1,
			"pointSize":         4,
			"showPoints":        "never",
			"spanNulls":         false,
			"stacking":          map[string]any{"group": "A", "mode": "none"},
			"thresholdsStyle":   map[string]any{"mode": "off"},
		},
		Thresholds: steps("green"),
		Unit:       unit,
	}, map[string]any{
		"legend":  map[string]any{"calcs": []string{"mean", "max", "lastNotNull"}, "displayMode": "table", "placement": "bottom", "showLegend": true},
		"tooltip": map[string]any{"mode": "multi", "sort": "desc"},
	}, targets)
}

// stat is a single-value panel, width w, 5 high, colored by thresholds.
func stat(title, description, unit string, w int, t Thresholds, targets ...Target) *Panel {
	return panel("stat", title, description, w, 5, FieldDefaults{
		Color:      map[string]any{"mode": "thresholds"},
		Thresholds: t,
		Unit:       unit,
	}, map[string]any{
		"colorMode":     "background",
		"graphMode":     "none",
		"justifyMode":   "auto",
		"orientation":   "auto",
		"reduceOptions": map[string]any{"calcs": []string{"lastNotNull"}, "fields": "", "values": false},
		"textMode":      "value_and_name",
		"wideLayout":    true,
	}, targets)
}

// heatmap shows a latency distribution over time. Native histograms come
// back from Prometheus as heatmap cells; classic buckets need format
// "heatmap" (le-ordered buckets).
func heatmap(title, description string, t Target, classic bool) *Panel {
	if classic {
		t.Format = "heatmap"
		t.LegendFormat = "{{le}}"
	}
	return panel("heatmap", title, description, 12, 9, FieldDefaults{
		Custom: map[string]any{
			"hideFrom":          map[string]any{"legend": false, "tooltip": false, "viz": false},
			"scaleDistribution": map[string]any{"type": "linear"},
		},
		Thresholds: steps("green"),
	}, map[string]any{
		"calculate":  false,
		"cellGap":    1,
		"cellValues": map[string]any{"unit": "reqps"},
		"color": map[string]any{
			"exponent": 0.5, "fill": "dark-orange", "mode": "scheme", "reverse": false,
			"scale": "exponential", "scheme": "Spectral", "steps": 64,
		},
		"exemplars":    map[string]any{"color": "rgba(255,0,255,0.7)"},
		"filterValues": map[string]any{"le": 1e-9},
		"legend":       map[string]any{"show": true},
		"rowsFrame":    map[string]any{"layout": "auto"},
		"tooltip":      map[string]any{"mode": "single", "showColorScale": false, "yHistogram": true},
		"yAxis":        map[string]any{"axisPlacement": "left", "reverse": false, "unit": "s"},
	}, []Target{t})
}

// dashed draws the series of query refID as a dashed line of the given
// color (SLO thresholds and objectives).
func (p *Panel) dashed(refID, color string) *Panel {
	p.FieldConfig.Overrides = append(p.FieldConfig.Overrides, Override{
		Matcher: map[string]any{"id": "byFrameRefID", "options": refID},
		Properties: []map[string]any{
			{"id": "custom.lineStyle", "value": map[string]any{"dash": []int{10, 10}, "fill": "dash"}},
			{"id": "custom.fillOpacity", "value": 0},
			{"id": "color", "value": map[string]any{"fixedColor": color, "mode": "fixed"}},
		},
	})
	return p
}

// thresholdLines shows the thresholds as lines (or lines and areas) on a
// timeseries panel.
func (p *Panel) thresholdLines(mode string, t Thresholds) *Panel {
	p.FieldConfig.Defaults.Thresholds = t
	p.FieldConfig.Defaults.Custom["thresholdsStyle"] = map[string]any{"mode": mode}
	return p
}

// bars draws stacked bars (counts per class).
func (p *Panel) bars() *Panel {
	p.FieldConfig.Defaults.Custom["drawStyle"] = "bars"
	p.FieldConfig.Defaults.Custom["fillOpacity"] = 80
	p.FieldConfig.Defaults.Custom["stacking"] = map[string]any{"group": "A", "mode": "normal"}
	return p
}

// ratio bounds a percentunit axis to [0, 1].
func (p *Panel) ratio() *Panel {
	p.FieldConfig.Defaults.Min = fptr(0)
	p.FieldConfig.Defaults.Max = fptr(1)
	return p
}

// minZero starts the axis at 0.
func (p *Panel) minZero() *Panel {
	p.FieldConfig.Defaults.Min = fptr(0)
	return p
}

// height sets the panel height.
func (p *Panel) height(h int) *Panel {
	p.GridPos.H = h
	return p
}

// valueMap maps exact values to text and colors (stat panels).
func (p *Panel) valueMap(m map[string][2]string) *Panel {
	opts := map[string]any{}
	i := 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		opts[k] = map[string]any{"color": m[k][1], "index": i, "text": m[k][0]}
		i++
	}
	p.FieldConfig.Defaults.Mappings = []any{map[string]any{"options": opts, "type": "value"}}
	return p
}

// rightAxis puts the series whose display name matches the regular
// expression on a right-hand axis with its own unit.
func (p *Panel) rightAxis(nameRegexp, unit string) *Panel {
	p.FieldConfig.Overrides = append(p.FieldConfig.Overrides, Override{
		Matcher: map[string]any{"id": "byRegexp", "options": nameRegexp},
		Properties: []map[string]any{
			{"id": "custom.axisPlacement", "value": "right"},
			{"id": "unit", "value": unit},
		},
	})
	return p
}
