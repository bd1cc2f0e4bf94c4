"""Config loading/validation (runs under CPython and MicroPython)."""
import json

from fwtest import raises
from wccp import config


def _err(src):
    return raises(config.ConfigError, config.load, src)


def test_default_config_is_service_0_hash_gre_on_loopback():
    cfg = config.load()
    assert cfg["router_id"] == "127.0.0.1"
    assert cfg["addresses"] == ["127.0.0.1"]
    assert len(cfg["services"]) == 1
    s = cfg["services"][0]
    assert s["type"] == "standard" and s["id"] == 0
    assert s["assignment"] == ["hash"] and s["forwarding"] == ["gre"] and s["return"] == ["gre"]
    assert s["max_caches"] == 32 and s["password"] is None
    assert cfg["http"]["port"] == 8080
    assert cfg["timers"]["here_i_am_ms"] == 10000


def test_load_accepts_json_text_and_bytes():
    text = json.dumps({"router_id": "10.0.0.1", "addresses": ["10.0.0.1", "10.0.1.1"],
                       "services": [{"id": 90, "type": "dynamic", "password": "secret",
                                     "assignment": ["hash", "mask"], "forwarding": ["gre", "l2"],
                                     "return": ["gre", "l2"], "multicast": "224.0.0.7",
                                     "l2_adjacent": ["10.0.0.5", {"address": "10.0.0.6", "mac": "02:00:00:00:00:06"}],
                                     "max_caches": 4}]})
    for src in (text, text.encode()):
        cfg = config.load(src)
        s = cfg["services"][0]
        assert s["id"] == 90 and s["password"] == "secret" and s["multicast"] == "224.0.0.7"
        assert s["l2_adjacent"][0] == {"address": "10.0.0.5", "mac": None}
        assert s["l2_adjacent"][1]["mac"] == "02:00:00:00:00:06"
        assert s["max_caches"] == 4


def test_errors_name_the_field_and_reason():
    e = _err('{"services": [{"id": 300, "type": "dynamic"}]}')
    assert e.field == "services[0].id" and "range" in e.reason
    e = _err({"services": [{"id": 5, "type": "dynamic", "password": "toolongpw"}]})
    assert e.field == "services[0].password" and "8" in e.reason
    e = _err({"router_id": "1.2.3", "services": [{"id": 0}]})
    assert e.field == "router_id"
    e = _err({"services": [{"id": 0, "assignment": ["round-robin"]}]})
    assert e.field == "services[0].assignment" and "round-robin" in e.reason
    e = _err({"services": [{"id": 0}, {"id": 0, "type": "standard"}]})
    assert e.field == "services[1].id" and "twice" in e.reason
    e = _err({"services": [{"id": 3, "type": "standard"}]})
    assert e.field == "services[0].id" and "standard" in e.reason
    e = _err({"services": [{"id": 1, "type": "dynamic", "multicast": "10.0.0.1"}]})
    assert e.field == "services[0].multicast" and "multicast" in e.reason
    e = _err({"services": [{"id": 1, "type": "dynamic", "l2_adjacent": ["10.0.0.1"]}]})
    assert e.field == "services[0].l2_adjacent"
    e = _err({"services": [{"id": 1, "type": "dynamic", "max_caches": 33}]})
    assert e.field == "services[0].max_caches"
    e = _err({"servics": []})
    assert e.field == "servics" and "unknown" in e.reason
    e = _err({"services": []})
    assert e.field == "services"
    e = _err({"services": [{"id": i, "type": "dynamic"} for i in range(1, 10)]})
    assert e.field == "services" and "slots" in e.reason
    e = _err("{not json")
    assert "JSON" in e.reason
    e = _err({"services": [{"id": 0}], "http": {"port": "80"}})
    assert e.field == "http.port"
    e = _err({"services": [{"id": 1, "type": "dynamic", "l2_adjacent": [{"address": "10.0.0.1", "mac": "zz"}],
                            "forwarding": ["l2"]}]})
    assert e.field == "services[0].l2_adjacent[0].mac"
    assert "services[0].l2_adjacent[0].mac" in str(e)


def test_load_file_missing_is_config_error():
    e = raises(config.ConfigError, config.load_file, "/nonexistent/wccp.json")
    assert "cannot read" in e.reason
