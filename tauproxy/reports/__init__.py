"""Reports: metrics over results (pass^k, rewards, costs) and their renderings. Reports only read."""
