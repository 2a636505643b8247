import type { LinkingMessages } from '../en.js'

const tr: LinkingMessages = {
  signInMethods: 'Giriş yöntemleri',
  loadingMethods: 'Giriş yöntemleri yükleniyor…',
  signInToManage: 'Giriş yöntemlerini görmek ve değiştirmek için uygulamada oturum açın.',
  kindEmail: 'E-posta',
  kindPasskey: 'Geçiş anahtarı',
  kindWallet: 'Cüzdan',
  kindOAuth: 'Sosyal hesap',
  linkedOn: '{date} tarihinde bağlandı',
  remove: 'Kaldır',
  removeMethod: '{label} kaldır',
  onlyMethod: 'Bu, giriş yapmanın tek yolun. Kaldırmadan önce başka bir yöntem ekle.',
  addMethod: 'Giriş yöntemi ekle',
  emailToLink: 'Eklenecek e-posta adresi',
  sendCode: 'Kod gönder',
  typeCodeInFrame: '{email} adresine gönderilen kodu pencereye yaz.',
  signInWalletToLink: 'İletiyi {name} içinde imzala',
  linking: 'Bağlanıyor…',
  methodLinked: '{label} bağlandı. Artık bununla giriş yapabilirsin.',
  removing: 'Kaldırılıyor…',
  methodRemoved: '{label} kaldırıldı.',
  secondFactor: 'İkinci faktör',
  mfaOff: 'Ayarlanmış ikinci faktör yok.',
  mfaOn: 'Bir kimlik doğrulama uygulaması ayarlı.',
  setUpTotp: 'Kimlik doğrulama uygulaması ayarla',
  settingUpTotp: 'Kimlik doğrulama uygulaması ayarlanıyor…',
  totpEnrolled: 'Kimlik doğrulama uygulaması ayarlandı. Kurtarma kodlarını güvenli bir yerde sakla.',
  methodsStatus: 'Giriş yöntemleri durumu',
}

export default tr
