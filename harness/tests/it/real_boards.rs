//! Images for the real boards: built, linked to their memory maps and ready
//! for probe-rs (flashing and running them needs the hardware).

use harness::config::board::Layout;
use object::{Object, ObjectSection, ObjectSymbol};

use crate::support::*;

#[test]
fn real_board_images_fit_their_memory_maps() {
    for name in ["nucleo-h743", "nrf52840-dk", "rp-pico"] {
        let board = board(name);
        let Layout::BareMetal(map) = board.layout else { panic!("{name} is bare metal") };
        let (firmware, sizes) = build(&board, &model("person_detection"));
        let data = std::fs::read(&firmware.elf).unwrap();
        let elf = object::File::parse(&*data).unwrap();

        let vectors = elf.section_by_name(".vector_table").unwrap();
        assert_eq!(vectors.address(), map.flash.origin, "{name}: vector table at the start of flash");
        let arena = elf.symbols().find(|s| s.name() == Ok("HILMEM_ARENA")).unwrap();
        let arena_home = map.arena.unwrap_or(map.ram);
        assert!(arena_home.contains(arena.address()) && arena.address() + arena.size() <= arena_home.end(), "{name}");
        assert!(elf.symbols().any(|s| s.name() == Ok("_SEGGER_RTT")), "{name}: RTT control block");
        assert!(sizes.flash_bytes.unwrap() <= map.flash.length, "{name}");
        assert!(sizes.static_ram_bytes + map.stack_bytes <= map.ram.length, "{name}");
        if let Some(boot2) = map.boot2 {
            let section = elf.section_by_name(".boot2").unwrap();
            assert_eq!((section.address(), section.size()), (boot2.origin, 256), "{name}: second-stage loader");
        }
    }
}
