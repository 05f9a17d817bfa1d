"""Results: the rows of a search, comparison, sweep or validation as a list of dicts, and as a pandas
DataFrame when pandas is installed."""


class Results(list):
    """A list of dicts, one per row of the command's ``--format json`` document (search: "ranked",
    compare: "rows", sweep: "points", validate: "cases"), with the rest of that document in ``meta``
    (a dict: the schema, the search space's counts, compare's configurations, the validation summary).

    ``to_frame()`` makes a pandas DataFrame (pandas is optional: ImportError without it):
      search    one row per layout: rank, the layout's fields (tensor, pipeline, ...), objective, and
                the nested figures as "estimate.iteration_time_s", "analytic.mfu", "simgrid.iteration_time_s", ...
      compare   one row per metric (the index), one column per configuration (its label); with
                ``diff_pct=True`` the differences from the reference in percent instead of the values
      sweep     one row per point: a column per swept key ("training.micro_batch"), then the figures
      validate  one row per case, as the dicts
    """

    def __init__(self, kind, rows, meta):
        super().__init__(rows)
        self.kind = kind
        self.meta = meta

    def __repr__(self):
        return f"<trainsim.Results {self.kind}: {len(self)} rows; .meta keys {sorted(self.meta)}>"

    def to_frame(self, diff_pct=False):
        """A pandas DataFrame of the rows (see the class); ImportError without pandas."""
        try:
            import pandas
        except ImportError:
            raise ImportError("Results.to_frame() needs pandas (Debian: apt-get install python3-pandas; "
                              "or pip install pandas); the results themselves are this list of dicts") from None
        if self.kind == "compare":
            labels = [c["label"] for c in self.meta["configurations"]]
            field = "diff_pct" if diff_pct else "values"
            frame = pandas.DataFrame([row[field] for row in self], columns=labels,
                                     index=pandas.Index([row["metric"] for row in self], name="metric"))
            return frame
        if diff_pct:
            raise ValueError("diff_pct applies to compare's results")
        return pandas.DataFrame([flat_row(self.kind, row) for row in self])


def flat_row(kind, row):
    """One row as a flat dict: nested objects' keys joined with "." (lists stay values); a search's
    layout fields and a sweep's swept values without their prefix."""
    out = {}
    for key, value in row.items():
        if (kind == "search" and key == "layout") or (kind == "sweep" and key == "values"):
            out.update(value)
        elif isinstance(value, dict):
            _flatten(value, key + ".", out)
        else:
            out[key] = value
    return out


def _flatten(d, prefix, out):
    for key, value in d.items():
        if isinstance(value, dict):
            _flatten(value, prefix + key + ".", out)
        else:
            out[prefix + key] = value
