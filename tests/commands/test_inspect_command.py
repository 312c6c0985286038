"""`toolformer inspect`: bad input is one clear error before anything listens."""

from toolformer_kit.commands import inspect


def test_a_port_out_of_range_is_refused(tmp_path, capsys):
    assert inspect.main([str(tmp_path), "--port", "70000"]) == 2
    err = capsys.readouterr().err
    assert "--port 70000 is not a port" in err and "Traceback" not in err
