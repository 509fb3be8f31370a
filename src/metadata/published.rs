//! The metadata image, published as immutable snapshots (Kafka's `MetadataPublisher`):
//! a reader takes the current image and holds no lock while it reads, so a read never
//! waits on a writer, and a second read inside the first cannot deadlock behind one.

use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use super::image::Image;

/// The current image of one node, replaced whole on each applied batch.
pub struct Published {
    current: ArcSwap<Image>,
    /// Serializes writers, so no update is lost; readers never take it.
    writer: Mutex<()>,
}

impl Default for Published {
    fn default() -> Self {
        Published::new(Image::default())
    }
}

impl Published {
    /// Publishes `image` as the first snapshot.
    pub fn new(image: Image) -> Self {
        Published { current: ArcSwap::from_pointee(image), writer: Mutex::new(()) }
    }

    /// The current snapshot. It stays as it is, whatever is published after.
    pub fn load(&self) -> Arc<Image> {
        self.current.load_full()
    }

    /// Replaces the image (a snapshot from the leader or the log).
    pub fn publish(&self, image: Image) {
        let _w = self.writer.lock();
        self.current.store(Arc::new(image));
    }

    /// Applies `f` to a copy of the current image and publishes the copy: readers see
    /// the image before `f` or after it, never halfway.
    pub fn update<R>(&self, f: impl FnOnce(&mut Image) -> R) -> R {
        let _w = self.writer.lock();
        let mut next = Image::clone(&self.current.load());
        let r = f(&mut next);
        self.current.store(Arc::new(next));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loaded_snapshot_does_not_change_and_nested_loads_do_not_block() {
        let p = Published::default();
        let before = p.load();
        let inner = p.load();
        p.update(|img| img.offset = 7);
        assert_eq!((before.offset, inner.offset, p.load().offset), (0, 0, 7));
        p.publish(Image { offset: 9, ..Image::default() });
        assert_eq!(p.load().offset, 9);
    }
}
