"""`wccp flash`: compile, copy, verify and start the firmware on a board."""
import sys


def register(sub):
    p = sub.add_parser("flash", help="flash the firmware to a MicroPython board with mpremote",
                       description="Compile firmware/wccp with mpy-cross for the board's .mpy version, copy it with "
                                   "the board definition, config and bitstream into the inactive firmware slot, "
                                   "verify every file by SHA-256 on the board, switch slots, reset and check that "
                                   "the firmware came up.")
    p.add_argument("--board", required=True, help="board definition name (boards/<name>.json), e.g. olimex_esp32_poe; "
                                                    "'virtual' for `wccp vboard`")
    p.add_argument("--port", required=True, help="serial device, e.g. /dev/ttyUSB0 or the vboard's /dev/pts/N")
    p.add_argument("--config", help="router configuration JSON (validated before copying)")
    p.add_argument("--bitstream", help="FPGA bitstream to copy (fpga.bit in the firmware slot)")
    p.add_argument("--fpga-build-id", help="BUILD_ID (hex) the firmware requires of the FPGA (default: from the "
                                          "report.json `wccp synth` wrote next to --bitstream; none: any build)")
    p.add_argument("--source", action="store_true", help="copy .py sources instead of compiling to .mpy")
    p.add_argument("--mip", action="store_true", help="install firmware/package.json dependencies with mip (needs "
                                                      "the host online; the firmware runs without them)")
    p.add_argument("--check", choices=("auto", "status", "repl", "none"), default="auto",
                   help="how to check the firmware came up: /status endpoint, REPL, or not at all")
    p.add_argument("--boot-wait", type=float, default=3.0, help="seconds of boot output to watch after reset")
    p.add_argument("--firmware-dir", help=argparse_suppress())
    p.set_defaults(func=run)


def argparse_suppress():
    import argparse
    return argparse.SUPPRESS


def run(args):
    from wccptool.boards import BoardError
    from wccptool.flash import FlashError, flash

    try:
        flash(args.board, args.port, config=args.config, bitstream=args.bitstream, compile=not args.source,
              mip=args.mip, check=args.check, boot_wait=args.boot_wait, firmware_dir=args.firmware_dir,
              fpga_build_id=args.fpga_build_id, progress=lambda m: print(m, flush=True))
    except (FlashError, BoardError, OSError) as e:
        print("wccp flash: error: %s" % e, file=sys.stderr)
        return 1
    return 0
