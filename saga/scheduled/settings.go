package scheduled

import (
	"fmt"
	"strconv"
	"time"
	// The dates are São Paulo's wherever pixd runs, its image without a
	// zone database included.
	_ "time/tzdata"

	"github.com/pixbank/pix/internal/pix"
)

// HourSetting is the environment variable of the hour (0 to 23, São Paulo
// time) at which a scheduled PIX runs on its date; unset: 0, the start of
// the day.
const HourSetting = "PIX_SCHEDULED_HOUR"

// MaxPendingSetting is the environment variable of the most scheduled PIX
// still to run one account may hold; unset: DefaultMaxPending.
const MaxPendingSetting = "PIX_SCHEDULED_MAX_PENDING"

// DefaultMaxPending is the most scheduled PIX still to run per account by
// default.
const DefaultMaxPending = 100

// MaxAhead is how far ahead a date may be: one year from today.
const MaxAhead = 1

// dateLayout is the date's format, YYYY-MM-DD.
const dateLayout = time.DateOnly

// saoPaulo is the zone of the dates.
var saoPaulo = mustLoad("America/Sao_Paulo")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err) // time/tzdata is embedded
	}
	return loc
}

// Settings are the saga's own settings.
type Settings struct {
	// Hour is the hour of its date at which a scheduled PIX runs.
	Hour int
	// MaxPending is the most scheduled PIX still to run per account.
	MaxPending int
}

// SettingsFrom reads the settings with lookup (os.LookupEnv).
func SettingsFrom(lookup func(string) (string, bool)) (Settings, error) {
	s := Settings{MaxPending: DefaultMaxPending}
	for _, setting := range []struct {
		name     string
		min, max int
		what     string
		dst      *int
	}{
		{HourSetting, 0, 23, "an hour from 0 to 23 (São Paulo time)", &s.Hour},
		{MaxPendingSetting, 1, 100_000, "a count from 1 to 100000", &s.MaxPending},
	} {
		v, ok := lookup(setting.name)
		if !ok || v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < setting.min || n > setting.max {
			return Settings{}, fmt.Errorf("%s=%q: %s", setting.name, v, setting.what)
		}
		*setting.dst = n
	}
	return s, nil
}

// RunAt is when a PIX scheduled for date runs: that date at the hour, São
// Paulo time. A date before today (São Paulo's, at now) or more than
// MaxAhead years after it is refused; today is accepted, and a time already
// past runs at once.
func (s Settings) RunAt(date string, now time.Time) (time.Time, error) {
	d, err := time.ParseInLocation(dateLayout, date, saoPaulo)
	if err != nil || d.Format(dateLayout) != date {
		return time.Time{}, pix.Invalid("scheduled_for", "must be a date, YYYY-MM-DD")
	}
	y, m, day := now.In(saoPaulo).Date()
	today := time.Date(y, m, day, 0, 0, 0, 0, saoPaulo)
	if d.Before(today) {
		return time.Time{}, pix.Invalid("scheduled_for", "must be today or later (America/Sao_Paulo)")
	}
	if d.After(today.AddDate(MaxAhead, 0, 0)) {
		return time.Time{}, pix.Invalid("scheduled_for", "must be at most %d year ahead", MaxAhead)
	}
	return time.Date(d.Year(), d.Month(), d.Day(), s.Hour, 0, 0, 0, saoPaulo), nil
}
