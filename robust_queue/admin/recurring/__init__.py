"""The recurring tasks page: schedules, runs, run now, switch on/off."""
